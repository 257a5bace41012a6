// Package delegatedauth authenticates and authorizes HTTP requests by asking the Kubernetes API server,
// the way an extension API server behind kube-apiserver's aggregation layer (or a metrics endpoint)
// does, without importing k8s.io/apiserver.
//
// Authentication (Authenticator.Authenticate) tries, in order:
//  1. front-proxy: a TLS client certificate that verifies against the requestheader CA, whose common
//     name is allowed, and a request that carries a user name header: the user is read from the
//     requestheader headers (name, UID, groups, extra). A verified front-proxy certificate without a
//     user name header falls through to the next steps;
//  2. a client certificate that verifies against the client CA: the user is its common name, the
//     groups its organizations;
//  3. "Authorization: Bearer <token>": a TokenReview, whose result is cached for CacheTTL;
//  4. no credentials: system:anonymous in system:unauthenticated when Anonymous is set.
//
// Both CAs and the requestheader settings come from the ConfigMap
// kube-system/extension-apiserver-authentication, which kube-apiserver publishes; Start loads it and
// reloads it every 30 seconds. Authenticated users get the group system:authenticated, as from
// kube-apiserver itself.
//
// A bad certificate or token is an error wrapping ErrUnauthorized (answer 401), never the anonymous
// user. A certificate that verifies against no pool does not stop a valid bearer token in the same
// request. Errors that do not wrap ErrUnauthorized mean the credentials could not be checked (the
// API server could not be reached).
//
// Authorization (Authorizer.Authorize) allows a few paths and groups outright and asks everything
// else with a SubjectAccessReview, caching allowed and denied answers for their own TTLs.
//
// TokenReviews and SubjectAccessReviews that fail to reach the API server, or are answered with a
// server error (5xx, 429), are retried with a short exponential backoff (0.4 s, 0.8 s, 1.6 s).
package delegatedauth

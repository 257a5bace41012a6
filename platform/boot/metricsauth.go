package boot

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/olmv1/olmv1/platform/delegatedauth"
)

// metricsAuth is the metrics server's filter: every request is authenticated with a TokenReview and
// authorized with a SubjectAccessReview for its verb and path (results cached briefly), both
// delegated to the API server. A request that cannot be authenticated — no token, an invalid or
// expired one — is answered 401 (controller-runtime's own filter answers 500 to an invalid token);
// an authenticated one that may not get the path, 403; an authorizer that cannot be reached, 503.
func metricsAuth(config *rest.Config, httpClient *http.Client) (metricsserver.Filter, error) {
	clients, err := delegatedauth.ClientsFor(config, httpClient)
	if err != nil {
		return nil, err
	}
	// Bearer tokens only: no ConfigMaps, so no client certificates.
	authenticator := delegatedauth.NewAuthenticator(delegatedauth.AuthenticatorOptions{
		TokenReviews: clients.TokenReviews,
		CacheTTL:     time.Minute,
	})
	authorizer := delegatedauth.NewAuthorizer(delegatedauth.AuthorizerOptions{
		SubjectAccessReviews: clients.SubjectAccessReviews,
		AllowTTL:             time.Minute,
		DenyTTL:              10 * time.Second,
	})
	return func(log logr.Logger, next http.Handler) (http.Handler, error) {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			user, err := authenticator.Authenticate(req)
			if err != nil {
				log.V(4).Info("metrics request not authenticated", "error", err)
				http.Error(w, "Unauthorized: send a valid bearer token (e.g. a ServiceAccount token)", http.StatusUnauthorized)
				return
			}
			verb := strings.ToLower(req.Method)
			allowed, reason, err := authorizer.Authorize(req.Context(), delegatedauth.Attributes{User: user, Verb: verb, Path: req.URL.Path})
			switch {
			case allowed:
				next.ServeHTTP(w, req)
			case err != nil:
				log.Error(err, "metrics request could not be authorized", "user", user.Name)
				http.Error(w, "authorization could not be checked; try again", http.StatusServiceUnavailable)
			default:
				log.V(4).Info("metrics request forbidden", "user", user.Name, "reason", reason)
				http.Error(w, fmt.Sprintf("Forbidden: user %q may not %s %s (bind a ClusterRole with nonResourceURLs [%s] and verbs [get])",
					user.Name, verb, req.URL.Path, req.URL.Path), http.StatusForbidden)
			}
		}), nil
	}, nil
}

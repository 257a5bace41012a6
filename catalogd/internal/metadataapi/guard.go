package metadataapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	metadatav1alpha1 "github.com/olmv1/olmv1/catalogd/api/metadata/v1alpha1"
	"github.com/olmv1/olmv1/platform/delegatedauth"
)

// guard is the standard extension API server's delegated authentication and authorization:
// kube-apiserver's front proxy (its client certificate, verified against the request-header CA of
// kube-system/extension-apiserver-authentication, with the user in X-Remote-* headers), client
// certificates of the client CA, and bearer tokens (TokenReview); then a SubjectAccessReview for
// the verb, resource and name, or the path. Requests without credentials are system:anonymous,
// which RBAC normally denies; system:masters is always allowed (kube-apiserver's availability
// checks of the APIService come as that group).
type guard struct {
	authn *delegatedauth.Authenticator
	authz *delegatedauth.Authorizer
}

func newGuard(config *rest.Config) (*guard, error) {
	clients, err := delegatedauth.ClientsFor(config, nil)
	if err != nil {
		return nil, err
	}
	return &guard{
		authn: delegatedauth.NewAuthenticator(delegatedauth.AuthenticatorOptions{
			TokenReviews: clients.TokenReviews, ConfigMaps: clients.ConfigMaps, Anonymous: true, CacheTTL: 10 * time.Second,
		}),
		authz: delegatedauth.NewAuthorizer(delegatedauth.AuthorizerOptions{
			SubjectAccessReviews: clients.SubjectAccessReviews,
			AllowTTL:             10 * time.Second, DenyTTL: 10 * time.Second,
			AlwaysAllowGroups: []string{"system:masters"},
		}),
	}, nil
}

// start loads the CAs and keeps them current.
func (g *guard) start(ctx context.Context, log logr.Logger) error {
	if err := g.authn.Start(ctx); err != nil {
		return fmt.Errorf("reading kube-system/extension-apiserver-authentication for delegated authentication: %w", err)
	}
	log.V(1).Info("delegated authentication and authorization ready")
	return nil
}

// authorize is the handler's authorizeFunc: 401 for credentials that do not authenticate, 403 for
// a user RBAC does not allow, 503 when kube-apiserver cannot be asked.
func (g *guard) authorize(w http.ResponseWriter, r *http.Request, req request) bool {
	user, err := g.authn.Authenticate(r)
	if err != nil {
		if errors.Is(err, delegatedauth.ErrUnauthorized) {
			writeError(w, r, apierrors.NewUnauthorized(err.Error()))
		} else {
			writeError(w, r, apierrors.NewServiceUnavailable("authentication could not be checked; try again: "+err.Error()))
		}
		return false
	}
	attrs := delegatedauth.Attributes{User: user, Verb: req.Verb, Path: req.Path, ResourceRequest: req.Resource}
	if req.Resource {
		attrs.Group, attrs.Version = metadatav1alpha1.GroupName, metadatav1alpha1.SchemeGroupVersion.Version
		attrs.Resource, attrs.Name = resourceName, req.Name
	}
	allowed, reason, err := g.authz.Authorize(r.Context(), attrs)
	switch {
	case err != nil:
		writeError(w, r, apierrors.NewServiceUnavailable("authorization could not be checked; try again: "+err.Error()))
		return false
	case !allowed:
		writeError(w, r, forbidden(user.Name, req, reason))
		return false
	}
	return true
}

// forbidden is kube-apiserver's 403 wording: what the user cannot do, and the authorizer's reason.
func forbidden(user string, req request, reason string) error {
	why := fmt.Sprintf("User %q cannot %s path %q", user, req.Verb, req.Path)
	gr := schema.GroupResource{}
	if req.Resource {
		gr = Resource(resourceName)
		why = fmt.Sprintf("User %q cannot %s resource %q in API group %q at the cluster scope", user, req.Verb, resourceName, metadatav1alpha1.GroupName)
	}
	if reason != "" {
		why += ": " + reason
	}
	return apierrors.NewForbidden(gr, req.Name, errors.New(why))
}

package delegatedauth

import (
	"net/http"

	authenticationv1 "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authorizationv1 "k8s.io/client-go/kubernetes/typed/authorization/v1"
	corev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
)

// Clients are the API clients an Authenticator and an Authorizer ask: TokenReviews,
// SubjectAccessReviews, and the ConfigMaps that hold the client and request-header CAs.
type Clients struct {
	TokenReviews         authenticationv1.TokenReviewInterface
	SubjectAccessReviews authorizationv1.SubjectAccessReviewInterface
	ConfigMaps           corev1.ConfigMapsGetter
}

// ClientsFor returns the Clients of config, sharing httpClient (nil: one made for config).
func ClientsFor(config *rest.Config, httpClient *http.Client) (Clients, error) {
	if httpClient == nil {
		var err error
		if httpClient, err = rest.HTTPClientFor(config); err != nil {
			return Clients{}, err
		}
	}
	authn, err := authenticationv1.NewForConfigAndClient(config, httpClient)
	if err != nil {
		return Clients{}, err
	}
	authz, err := authorizationv1.NewForConfigAndClient(config, httpClient)
	if err != nil {
		return Clients{}, err
	}
	core, err := corev1.NewForConfigAndClient(config, httpClient)
	if err != nil {
		return Clients{}, err
	}
	return Clients{TokenReviews: authn.TokenReviews(), SubjectAccessReviews: authz.SubjectAccessReviews(), ConfigMaps: core}, nil
}

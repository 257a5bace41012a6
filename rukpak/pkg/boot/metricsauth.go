package boot

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/apis/apiserver"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	authenticationv1 "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authorizationv1 "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// reviewBackoff retries TokenReviews and SubjectAccessReviews that fail to reach the API server.
var reviewBackoff = wait.Backoff{Duration: 400 * time.Millisecond, Factor: 2, Jitter: 0.1, Steps: 4}

// metricsAuth is the metrics server's filter: every request is authenticated with a TokenReview and
// authorized with a SubjectAccessReview for its verb and path (results cached briefly), both
// delegated to the API server. A request that cannot be authenticated — no token, an invalid or
// expired one — is answered 401 (controller-runtime's own filter answers 500 to an invalid token);
// an authenticated one that may not get the path, 403; an authorizer that cannot be reached, 503.
func metricsAuth(config *rest.Config, httpClient *http.Client) (metricsserver.Filter, error) {
	authn, err := authenticationv1.NewForConfigAndClient(config, httpClient)
	if err != nil {
		return nil, err
	}
	authz, err := authorizationv1.NewForConfigAndClient(config, httpClient)
	if err != nil {
		return nil, err
	}
	authenticator, _, err := authenticatorfactory.DelegatingAuthenticatorConfig{
		Anonymous:                &apiserver.AnonymousAuthConfig{Enabled: false},
		CacheTTL:                 time.Minute,
		TokenAccessReviewClient:  authn,
		TokenAccessReviewTimeout: 10 * time.Second,
		WebhookRetryBackoff:      &reviewBackoff,
	}.New()
	if err != nil {
		return nil, fmt.Errorf("metrics: building the TokenReview authenticator: %w", err)
	}
	authorizerImpl, err := authorizerfactory.DelegatingAuthorizerConfig{
		SubjectAccessReviewClient: authz,
		AllowCacheTTL:             time.Minute,
		DenyCacheTTL:              10 * time.Second,
		WebhookRetryBackoff:       &reviewBackoff,
	}.New()
	if err != nil {
		return nil, fmt.Errorf("metrics: building the SubjectAccessReview authorizer: %w", err)
	}
	return func(log logr.Logger, next http.Handler) (http.Handler, error) {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			res, ok, err := authenticator.AuthenticateRequest(req)
			if err != nil || !ok {
				log.V(4).Info("metrics request not authenticated", "error", err)
				http.Error(w, "Unauthorized: send a valid bearer token (e.g. a ServiceAccount token)", http.StatusUnauthorized)
				return
			}
			decision, reason, err := authorizerImpl.Authorize(req.Context(), authorizer.AttributesRecord{
				User: res.User, Verb: strings.ToLower(req.Method), Path: req.URL.Path, ResourceRequest: false,
			})
			switch {
			case decision == authorizer.DecisionAllow:
				next.ServeHTTP(w, req)
			case err != nil:
				log.Error(err, "metrics request could not be authorized", "user", res.User.GetName())
				http.Error(w, "authorization could not be checked; try again", http.StatusServiceUnavailable)
			default:
				log.V(4).Info("metrics request forbidden", "user", res.User.GetName(), "reason", reason)
				http.Error(w, fmt.Sprintf("Forbidden: user %q may not %s %s (bind a ClusterRole with nonResourceURLs [%s] and verbs [get])",
					res.User.GetName(), strings.ToLower(req.Method), req.URL.Path, req.URL.Path), http.StatusForbidden)
			}
		}), nil
	}, nil
}

package delegatedauth

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/apimachinery/pkg/util/wait"
	authenticationv1client "k8s.io/client-go/kubernetes/typed/authentication/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
)

// AuthenticatorOptions configure an Authenticator.
type AuthenticatorOptions struct {
	// TokenReviews checks bearer tokens; nil: a request with a bearer token is rejected.
	TokenReviews authenticationv1client.TokenReviewInterface
	// ConfigMaps reads kube-system/extension-apiserver-authentication (client CA, front-proxy CA and
	// headers); nil: client certificates and front-proxy headers are not accepted.
	ConfigMaps corev1client.ConfigMapsGetter
	// CacheTTL is how long a TokenReview result is reused; 0 means 10 seconds.
	CacheTTL time.Duration
	// Anonymous makes requests without credentials system:anonymous in system:unauthenticated;
	// otherwise they are rejected.
	Anonymous bool
	// Audiences, when set, are sent with each TokenReview, and a token must be valid for one of them.
	Audiences []string
}

// Authenticator authenticates requests with the API server's help; see the package documentation.
type Authenticator struct {
	tokenReviews authenticationv1client.TokenReviewInterface
	configMaps   corev1client.ConfigMapsGetter
	cacheTTL     time.Duration
	anonymous    bool
	audiences    []string
	certs        atomic.Pointer[certConfig]
	tokens       *cache.LRUExpireCache
	backoff      wait.Backoff
}

// NewAuthenticator returns an Authenticator that accepts no certificates until Load or Start has read
// the authentication ConfigMap.
func NewAuthenticator(o AuthenticatorOptions) *Authenticator {
	a := &Authenticator{
		tokenReviews: o.TokenReviews,
		configMaps:   o.ConfigMaps,
		cacheTTL:     o.CacheTTL,
		anonymous:    o.Anonymous,
		audiences:    slices.Clone(o.Audiences),
		tokens:       cache.NewLRUExpireCache(cacheSize),
		backoff:      reviewBackoff,
	}
	if a.cacheTTL <= 0 {
		a.cacheTTL = 10 * time.Second
	}
	a.certs.Store(&certConfig{})
	return a
}

// TLSClientAuth is the tls.Config ClientAuth a server using a to authenticate should set:
// tls.RequestClientCert, so that clients are asked for a certificate but the TLS handshake does not
// verify it; Authenticate verifies it against the CAs current at the time of the request, so a
// reloaded ConfigMap takes effect without restarting the server. Without ConfigMaps in the options no
// certificate would be accepted, and it is tls.NoClientCert.
func (a *Authenticator) TLSClientAuth() tls.ClientAuthType {
	if a.configMaps == nil {
		return tls.NoClientCert
	}
	return tls.RequestClientCert
}

// Authenticate returns the request's user: from front-proxy headers, a client certificate, a bearer
// token, or anonymous, in that order (see the package documentation). Rejected credentials are an
// error wrapping ErrUnauthorized; other errors mean a TokenReview could not be made.
func (a *Authenticator) Authenticate(r *http.Request) (*User, error) {
	cert := authenticateCert(r, a.certs.Load())
	if cert.user != nil {
		return withAuthenticatedGroup(cert.user), nil
	}
	token, ok, err := bearerToken(r)
	switch {
	case err != nil:
		return nil, err
	case ok && a.tokenReviews == nil:
		return nil, fmt.Errorf("%w: bearer tokens are not accepted", ErrUnauthorized)
	case ok:
		return a.authenticateToken(r.Context(), token)
	case cert.err != nil:
		return nil, cert.err
	case a.anonymous:
		return anonymous(), nil
	default:
		return nil, fmt.Errorf("%w: no credentials (send a bearer token)", ErrUnauthorized)
	}
}

// bearerToken reads "Authorization: Bearer <token>"; ok is false without such a header.
func bearerToken(r *http.Request) (token string, ok bool, err error) {
	fields := strings.Fields(r.Header.Get("Authorization"))
	if len(fields) == 0 || !strings.EqualFold(fields[0], "bearer") {
		return "", false, nil
	}
	if len(fields) != 2 {
		return "", false, fmt.Errorf("%w: malformed bearer token (want \"Authorization: Bearer <token>\")", ErrUnauthorized)
	}
	return fields[1], true, nil
}

// tokenResult is a TokenReview's answer as cached: a user, or the reason the token was rejected.
type tokenResult struct {
	user    *User
	message string
}

// authenticateToken returns the token's user from the cache or a TokenReview.
func (a *Authenticator) authenticateToken(ctx context.Context, token string) (*User, error) {
	key := sha256.Sum256([]byte(token))
	v, ok := a.tokens.Get(key)
	if !ok {
		res, err := a.reviewToken(ctx, token)
		if err != nil {
			return nil, fmt.Errorf("TokenReview failed (the service account needs create on "+
				"tokenreviews.authentication.k8s.io): %w", err)
		}
		a.tokens.Add(key, res, a.cacheTTL)
		v = res
	}
	res := v.(tokenResult)
	if res.user == nil {
		return nil, fmt.Errorf("%w: %s", ErrUnauthorized, res.message)
	}
	return cloneUser(res.user), nil
}

// reviewToken asks the API server about token.
func (a *Authenticator) reviewToken(ctx context.Context, token string) (tokenResult, error) {
	review := &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token, Audiences: a.audiences}}
	var status authenticationv1.TokenReviewStatus
	err := withRetry(ctx, a.backoff, func(ctx context.Context) error {
		got, err := a.tokenReviews.Create(ctx, review, metav1.CreateOptions{})
		if err == nil {
			status = got.Status
		}
		return err
	})
	if err != nil {
		return tokenResult{}, err
	}
	switch {
	case !status.Authenticated && status.Error != "":
		return tokenResult{message: "token rejected: " + status.Error}, nil
	case !status.Authenticated:
		return tokenResult{message: "token rejected"}, nil
	case len(a.audiences) > 0 && !slices.ContainsFunc(status.Audiences, func(s string) bool { return slices.Contains(a.audiences, s) }):
		return tokenResult{message: fmt.Sprintf("token is not valid for the audiences %v", a.audiences)}, nil
	}
	u := &User{Name: status.User.Username, UID: status.User.UID, Groups: slices.Clone(status.User.Groups)}
	for k, v := range status.User.Extra {
		if u.Extra == nil {
			u.Extra = map[string][]string{}
		}
		u.Extra[k] = slices.Clone([]string(v))
	}
	return tokenResult{user: withAuthenticatedGroup(u)}, nil
}

// cloneUser is a deep copy of u, so that callers cannot change what the cache holds.
func cloneUser(u *User) *User {
	c := &User{Name: u.Name, UID: u.UID, Groups: slices.Clone(u.Groups)}
	if u.Extra != nil {
		c.Extra = make(map[string][]string, len(u.Extra))
		for k, v := range u.Extra {
			c.Extra[k] = slices.Clone(v)
		}
	}
	return c
}

package delegatedauth

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// tokenServer answers TokenReviews: the token "good" is alice, every other token is rejected. It
// fails the first failures calls with err.
type tokenServer struct {
	calls     atomic.Int32
	failures  int32
	err       error
	audiences []string
	client    *fake.Clientset
}

func newTokenServer() *tokenServer {
	s := &tokenServer{client: fake.NewClientset()}
	s.client.PrependReactor("create", "tokenreviews", func(action k8stesting.Action) (bool, runtime.Object, error) {
		n := s.calls.Add(1)
		if n <= s.failures {
			return true, nil, s.err
		}
		tr := action.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenReview)
		s.audiences = tr.Spec.Audiences
		out := tr.DeepCopy()
		if tr.Spec.Token == "good" {
			out.Status = authenticationv1.TokenReviewStatus{Authenticated: true, Audiences: tr.Spec.Audiences, User: authenticationv1.UserInfo{
				Username: "alice", UID: "u1", Groups: []string{"devs"}, Extra: map[string]authenticationv1.ExtraValue{"scopes": {"x"}},
			}}
		} else {
			out.Status = authenticationv1.TokenReviewStatus{Error: "token has expired"}
		}
		return true, out, nil
	})
	return s
}

func (s *tokenServer) authenticator(anonymous bool) *Authenticator {
	a := NewAuthenticator(AuthenticatorOptions{TokenReviews: s.client.AuthenticationV1().TokenReviews(), Anonymous: anonymous})
	a.backoff = fastBackoff
	return a
}

func bearer(token string) *http.Request { return request(nil, "Authorization", "Bearer "+token) }

func TestBearerTokenIsReviewedAndCached(t *testing.T) {
	s := newTokenServer()
	a := s.authenticator(false)
	want := &User{Name: "alice", UID: "u1", Groups: []string{"devs", AuthenticatedGroup}, Extra: map[string][]string{"scopes": {"x"}}}
	for i := range 2 {
		got, err := a.Authenticate(bearer("good"))
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("call %d: got %+v, %v; want %+v", i, got, err, want)
		}
		got.Groups[0] = "changed by the caller"
	}
	if n := s.calls.Load(); n != 1 {
		t.Errorf("want one TokenReview for two requests with the same token, got %d", n)
	}
}

func TestInvalidTokenIsUnauthorized(t *testing.T) {
	s := newTokenServer()
	a := s.authenticator(true)
	for _, r := range []*http.Request{bearer("bad"), bearer("bad")} {
		got, err := a.Authenticate(r)
		if !errors.Is(err, ErrUnauthorized) || !strings.Contains(err.Error(), "token has expired") || got != nil {
			t.Fatalf("want ErrUnauthorized with the review's message (never anonymous), got %+v, %v", got, err)
		}
	}
	if n := s.calls.Load(); n != 1 {
		t.Errorf("a rejected token is cached too: want 1 TokenReview, got %d", n)
	}
	if _, err := a.Authenticate(request(nil, "Authorization", "Bearer a b")); !errors.Is(err, ErrUnauthorized) {
		t.Errorf("malformed header: want ErrUnauthorized, got %v", err)
	}
	if _, err := NewAuthenticator(AuthenticatorOptions{Anonymous: true}).Authenticate(bearer("good")); !errors.Is(err, ErrUnauthorized) {
		t.Errorf("without TokenReviews a token is rejected, got %v", err)
	}
}

func TestTokenAudiences(t *testing.T) {
	s := newTokenServer()
	a := NewAuthenticator(AuthenticatorOptions{TokenReviews: s.client.AuthenticationV1().TokenReviews(), Audiences: []string{"catalogd"}})
	if _, err := a.Authenticate(bearer("good")); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(s.audiences, []string{"catalogd"}) {
		t.Errorf("the TokenReview must carry the audiences, got %v", s.audiences)
	}
}

func TestTokenReviewErrors(t *testing.T) {
	s := newTokenServer()
	s.failures, s.err = 2, apierrors.NewServiceUnavailable("restarting")
	if got, err := s.authenticator(false).Authenticate(bearer("good")); err != nil || got.Name != "alice" {
		t.Fatalf("a 503 is retried: got %+v, %v", got, err)
	}
	if n := s.calls.Load(); n != 3 {
		t.Errorf("want 3 attempts, got %d", n)
	}

	s = newTokenServer()
	s.failures, s.err = 10, apierrors.NewForbidden(schema.GroupResource{Group: "authentication.k8s.io", Resource: "tokenreviews"}, "", errors.New("no RBAC"))
	_, err := s.authenticator(false).Authenticate(bearer("good"))
	if err == nil || errors.Is(err, ErrUnauthorized) || !strings.Contains(err.Error(), "create on tokenreviews") {
		t.Errorf("want an error that is not ErrUnauthorized and says what is missing, got %v", err)
	}
	if n := s.calls.Load(); n != 1 {
		t.Errorf("a 403 is not retried: want 1 attempt, got %d", n)
	}
}

func TestAnonymous(t *testing.T) {
	s := newTokenServer()
	got, err := s.authenticator(true).Authenticate(request(nil))
	if want := anonymous(); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("anonymous on: got %+v, %v; want %+v", got, err, want)
	}
	if got, err := s.authenticator(false).Authenticate(request(nil, "Authorization", "Basic Zm9vOmJhcg==")); !errors.Is(err, ErrUnauthorized) {
		t.Errorf("anonymous off: want ErrUnauthorized, got %+v, %v", got, err)
	}
	if n := s.calls.Load(); n != 0 {
		t.Errorf("no token, no TokenReview: got %d", n)
	}
}

func TestUntrustedCertificateWithToken(t *testing.T) {
	s := newTokenServer()
	clientCA := newCA(t, "client-ca", nil)
	cms := fake.NewClientset(authConfigMap(clientCA.Cert, nil, "")).CoreV1()
	a := NewAuthenticator(AuthenticatorOptions{TokenReviews: s.client.AuthenticationV1().TokenReviews(), ConfigMaps: cms, Anonymous: true})
	if err := a.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	untrusted := certs(newClientCert(t, newCA(t, "other", nil), "bob"))
	if got, err := a.Authenticate(request(untrusted, "Authorization", "Bearer good")); err != nil || got.Name != "alice" {
		t.Errorf("a valid token authenticates despite an untrusted certificate: got %+v, %v", got, err)
	}
	if got, err := a.Authenticate(request(untrusted)); !errors.Is(err, ErrUnauthorized) {
		t.Errorf("an untrusted certificate alone is rejected, never anonymous: got %+v, %v", got, err)
	}
}

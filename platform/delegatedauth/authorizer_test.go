package delegatedauth

import (
	"context"
	"errors"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// sarServer answers SubjectAccessReviews: users in the group "readers" may get, nobody else may do
// anything. It fails the first failures calls with err and records the last spec.
type sarServer struct {
	calls    atomic.Int32
	failures int32
	err      error
	last     authorizationv1.SubjectAccessReviewSpec
	client   *fake.Clientset
}

func newSARServer() *sarServer {
	s := &sarServer{client: fake.NewClientset()}
	s.client.PrependReactor("create", "subjectaccessreviews", func(action k8stesting.Action) (bool, runtime.Object, error) {
		if s.calls.Add(1) <= s.failures {
			return true, nil, s.err
		}
		sar := action.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview).DeepCopy()
		s.last = sar.Spec
		verb := ""
		if ra := sar.Spec.ResourceAttributes; ra != nil {
			verb = ra.Verb
		} else if nra := sar.Spec.NonResourceAttributes; nra != nil {
			verb = nra.Verb
		}
		for _, g := range sar.Spec.Groups {
			if g == "readers" && verb == "get" {
				sar.Status = authorizationv1.SubjectAccessReviewStatus{Allowed: true, Reason: "readers may get"}
				return true, sar, nil
			}
		}
		sar.Status = authorizationv1.SubjectAccessReviewStatus{Reason: "no RBAC rule"}
		return true, sar, nil
	})
	return s
}

func (s *sarServer) authorizer(o AuthorizerOptions) *Authorizer {
	o.SubjectAccessReviews = s.client.AuthorizationV1().SubjectAccessReviews()
	z := NewAuthorizer(o)
	z.backoff = fastBackoff
	return z
}

var reader = &User{Name: "alice", UID: "u1", Groups: []string{"readers"}, Extra: map[string][]string{"scopes": {"x"}}}

func TestAlwaysAllowSkipsTheReview(t *testing.T) {
	s := newSARServer()
	z := s.authorizer(AuthorizerOptions{AlwaysAllowPaths: []string{"/healthz"}, AlwaysAllowGroups: []string{"system:masters"}})
	ctx := context.Background()
	for _, attrs := range []Attributes{
		{User: &User{Name: "bob"}, Verb: "get", Path: "/healthz"},
		{User: &User{Name: "root", Groups: []string{"system:masters"}}, Verb: "delete", ResourceRequest: true, Resource: "pods"},
	} {
		if ok, reason, err := z.Authorize(ctx, attrs); !ok || err != nil || reason == "" {
			t.Errorf("%+v: got %v, %q, %v", attrs, ok, reason, err)
		}
	}
	if n := s.calls.Load(); n != 0 {
		t.Errorf("want no SubjectAccessReview, got %d", n)
	}
	if ok, _, _ := z.Authorize(ctx, Attributes{User: &User{Name: "bob"}, Verb: "get", Path: "/healthz/extra"}); ok || s.calls.Load() != 1 {
		t.Errorf("paths match exactly: got allowed=%v after %d reviews", ok, s.calls.Load())
	}
}

func TestSubjectAccessReviewAttributes(t *testing.T) {
	user := reader
	tests := []struct {
		name  string
		attrs Attributes
		want  authorizationv1.SubjectAccessReviewSpec
	}{{
		name: "resource",
		attrs: Attributes{User: user, Verb: "get", ResourceRequest: true, Path: "/ignored",
			Group: "olm.operatorframework.io", Version: "v1", Resource: "clustercatalogs", Subresource: "status", Namespace: "ns", Name: "c"},
		want: authorizationv1.SubjectAccessReviewSpec{
			User: "alice", UID: "u1", Groups: []string{"readers"}, Extra: map[string]authorizationv1.ExtraValue{"scopes": {"x"}},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "ns", Verb: "get", Group: "olm.operatorframework.io",
				Version: "v1", Resource: "clustercatalogs", Subresource: "status", Name: "c"},
		},
	}, {
		name:  "non-resource",
		attrs: Attributes{User: user, Verb: "get", Path: "/metrics"},
		want: authorizationv1.SubjectAccessReviewSpec{
			User: "alice", UID: "u1", Groups: []string{"readers"}, Extra: map[string]authorizationv1.ExtraValue{"scopes": {"x"}},
			NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSARServer()
			ok, reason, err := s.authorizer(AuthorizerOptions{}).Authorize(context.Background(), tt.attrs)
			if !ok || err != nil || reason != "readers may get" {
				t.Errorf("got %v, %q, %v", ok, reason, err)
			}
			if !reflect.DeepEqual(s.last, tt.want) {
				t.Errorf("review spec\n got %+v\nwant %+v", s.last, tt.want)
			}
		})
	}
}

func TestAuthorizeCachesAllowAndDeny(t *testing.T) {
	s := newSARServer()
	clock := &fakeClock{now: time.Now()}
	z := s.authorizer(AuthorizerOptions{AllowTTL: time.Minute, DenyTTL: 10 * time.Second})
	z.answers = cache.NewLRUExpireCacheWithClock(cacheSize, clock)
	ctx := context.Background()
	allow := Attributes{User: reader, Verb: "get", Path: "/metrics"}
	deny := Attributes{User: reader, Verb: "delete", Path: "/metrics"}
	ask := func(attrs Attributes, wantAllowed bool, wantCalls int32) {
		t.Helper()
		if ok, _, err := z.Authorize(ctx, attrs); ok != wantAllowed || err != nil {
			t.Fatalf("%s: got %v, %v", attrs.Verb, ok, err)
		}
		if n := s.calls.Load(); n != wantCalls {
			t.Fatalf("%s: want %d reviews so far, got %d", attrs.Verb, wantCalls, n)
		}
	}
	ask(allow, true, 1)
	ask(deny, false, 2)
	ask(allow, true, 2)
	ask(deny, false, 2)
	clock.Step(11 * time.Second)
	ask(allow, true, 2)
	ask(deny, false, 3)
	clock.Step(time.Minute)
	ask(allow, true, 4)

	other := *reader
	other.Extra = map[string][]string{"scopes": {"y"}}
	ask(Attributes{User: &other, Verb: "get", Path: "/metrics"}, true, 5)
}

func TestAuthorizeErrors(t *testing.T) {
	ctx := context.Background()
	attrs := Attributes{User: reader, Verb: "get", Path: "/metrics"}

	s := newSARServer()
	s.failures, s.err = 2, errors.New("connection refused")
	if ok, _, err := s.authorizer(AuthorizerOptions{}).Authorize(ctx, attrs); !ok || err != nil || s.calls.Load() != 3 {
		t.Errorf("transport errors are retried: got %v, %v after %d calls", ok, err, s.calls.Load())
	}

	s = newSARServer()
	s.failures, s.err = 10, apierrors.NewForbidden(schema.GroupResource{Group: "authorization.k8s.io", Resource: "subjectaccessreviews"}, "", errors.New("no RBAC"))
	z := s.authorizer(AuthorizerOptions{})
	for want := int32(1); want <= 2; want++ {
		if ok, _, err := z.Authorize(ctx, attrs); ok || err == nil || s.calls.Load() != want {
			t.Errorf("a 403 is an error, neither retried nor cached: got %v, %v after %d calls", ok, err, s.calls.Load())
		}
	}
	if _, _, err := z.Authorize(ctx, Attributes{Verb: "get", Path: "/metrics"}); err == nil {
		t.Error("no user: want an error")
	}
}

package boot

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// fakeReviewServer is an API server that answers TokenReviews (the token "good" is alice) and
// SubjectAccessReviews (alice may get /metrics; a review for /broken fails with 403).
func fakeReviewServer(t *testing.T, tokenReviews *atomic.Int32) *httptest.Server {
	decode := func(w http.ResponseWriter, r *http.Request, v any) bool {
		if err := json.NewDecoder(r.Body).Decode(v); err != nil {
			t.Errorf("%s: %v", r.URL.Path, err)
			http.Error(w, err.Error(), http.StatusBadRequest)
			return false
		}
		return true
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/apis/authentication.k8s.io/v1/tokenreviews":
			tokenReviews.Add(1)
			var tr authenticationv1.TokenReview
			if !decode(w, r, &tr) {
				return
			}
			if tr.Spec.Token == "good" {
				tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: "alice"}}
			} else {
				tr.Status = authenticationv1.TokenReviewStatus{Error: "invalid token"}
			}
			_ = json.NewEncoder(w).Encode(&tr)
		case "/apis/authorization.k8s.io/v1/subjectaccessreviews":
			var sar authorizationv1.SubjectAccessReview
			if !decode(w, r, &sar) {
				return
			}
			nra := sar.Spec.NonResourceAttributes
			if nra.Path == "/broken" {
				w.WriteHeader(http.StatusForbidden)
				_ = json.NewEncoder(w).Encode(&metav1.Status{Status: metav1.StatusFailure, Code: http.StatusForbidden, Reason: metav1.StatusReasonForbidden})
				return
			}
			sar.Status.Allowed = sar.Spec.User == "alice" && nra.Verb == "get" && nra.Path == "/metrics"
			_ = json.NewEncoder(w).Encode(&sar)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestMetricsAuth(t *testing.T) {
	var tokenReviews atomic.Int32
	cfg := &rest.Config{
		Host:          fakeReviewServer(t, &tokenReviews).URL,
		ContentConfig: rest.ContentConfig{ContentType: "application/json"},
	}
	httpClient, err := rest.HTTPClientFor(cfg)
	must(t, err)
	filter, err := metricsAuth(cfg, httpClient)
	must(t, err)
	handler, err := filter(logr.Discard(), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("metrics"))
	}))
	must(t, err)

	tests := []struct {
		name, method, path, token string
		wantCode                  int
		wantBody                  string
	}{
		{"no token", http.MethodGet, "/metrics", "", http.StatusUnauthorized, "Unauthorized: send a valid bearer token (e.g. a ServiceAccount token)"},
		{"invalid token", http.MethodGet, "/metrics", "bad", http.StatusUnauthorized, "Unauthorized: send a valid bearer token"},
		{"allowed", http.MethodGet, "/metrics", "good", http.StatusOK, "metrics"},
		{"forbidden", http.MethodPost, "/metrics", "good", http.StatusForbidden,
			`Forbidden: user "alice" may not post /metrics (bind a ClusterRole with nonResourceURLs [/metrics] and verbs [get])`},
		{"authorizer fails", http.MethodGet, "/broken", "good", http.StatusServiceUnavailable, "authorization could not be checked; try again"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(tt.method, tt.path, nil)
			if tt.token != "" {
				req.Header.Set("Authorization", "Bearer "+tt.token)
			}
			rec := httptest.NewRecorder()
			handler.ServeHTTP(rec, req)
			if rec.Code != tt.wantCode || !strings.Contains(rec.Body.String(), tt.wantBody) {
				t.Errorf("got %d %q, want %d %q", rec.Code, rec.Body.String(), tt.wantCode, tt.wantBody)
			}
		})
	}
	if n := tokenReviews.Load(); n != 2 {
		t.Errorf("the good token is reviewed once and then cached: want 2 TokenReviews (good, bad), got %d", n)
	}
}

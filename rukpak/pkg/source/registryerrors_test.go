package source

import (
	"net/http"
	"testing"
	"time"

	"github.com/olmv1/olmv1/rukpak/pkg/source/sourcetest"
)

// A registry that is busy (503, 429, with or without Retry-After) or down (connection refused):
// a retryable Unreachable error naming the registry and the status, the server's Retry-After when
// it sent one, and a bounded number of requests per Unpack (go-containerregistry retries a 503
// once, a 429 never).
func TestImageRegistryBusyOrDown(t *testing.T) {
	reg := sourcetest.NewRegistry(t)
	reg.Push(t, catalogImage(t, "catalog"), "catalogs/demo:v1")
	ref := reg.Ref("catalogs/demo:v1")
	u := newTestUnpacker(t, nil)

	for _, tc := range []struct {
		name       string
		status     int
		retryAfter string
		message    string
		wantWait   time.Duration
		requests   int
	}{
		{"503", http.StatusServiceUnavailable, "", "answered 503 Service Unavailable for image \"" + ref + "\"; will retry with backoff", 0, 2},
		{"503 with Retry-After", http.StatusServiceUnavailable, "30", "answered 503 Service Unavailable for image \"" + ref + "\"; will retry in 30s, as the server asked (Retry-After)", 30 * time.Second, 2},
		{"429", http.StatusTooManyRequests, "", "answered 429 Too Many Requests for image \"" + ref + "\"; will retry with backoff", 0, 1},
		{"429 with Retry-After", http.StatusTooManyRequests, "7", "answered 429 Too Many Requests for image \"" + ref + "\"; will retry in 7s, as the server asked (Retry-After)", 7 * time.Second, 1},
		{"429 with a Retry-After date", http.StatusTooManyRequests, time.Now().Add(2 * time.Minute).UTC().Format(http.TimeFormat), "answered 429 Too Many Requests for image \"" + ref + "\"; will retry in ", 2 * time.Minute, 1},
		{"500", http.StatusInternalServerError, "", "answered 500 Internal Server Error for image \"" + ref + "\"; will retry with backoff", 0, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg.Fail(tc.status, tc.retryAfter)
			reg.ResetRequests()
			_, err := u.Unpack(ctx(t), "catalog/busy", imageSrc(ref), catalogOpts)
			e := wantError(t, err, KindUnreachable, "registry "+reg.Host+" "+tc.message)
			if !e.Retryable {
				t.Error("a busy registry is retryable")
			}
			// An HTTP date is read to the second against the clock of the moment: allow 2s.
			if d := e.RetryAfter - tc.wantWait; d < -2*time.Second || d > 2*time.Second || (tc.wantWait == 0 && e.RetryAfter != 0) {
				t.Errorf("RetryAfter %s, want %s", e.RetryAfter, tc.wantWait)
			}
			if got := RetryAfterOf(err); got != e.RetryAfter {
				t.Errorf("RetryAfterOf %s, want %s", got, e.RetryAfter)
			}
			if n := len(reg.Requests()); n != tc.requests {
				t.Errorf("one Unpack sent %d requests (%v), want %d", n, reg.Requests(), tc.requests)
			}
			assertCacheEmpty(t, u)
		})
	}

	reg.Fail(0, "")
	if _, err := u.Unpack(ctx(t), "catalog/busy", imageSrc(ref), catalogOpts); err != nil {
		t.Fatalf("the registry is back: %v", err)
	}

	reg.Stop()
	_, err := u.Unpack(ctx(t), "catalog/busy", imageSrc(ref), catalogOpts)
	e := wantError(t, err, KindUnreachable, "cannot reach registry "+reg.Host+" for image \""+ref+"\": ", "connection refused", "; will retry with backoff")
	if !e.Retryable || e.RetryAfter != 0 {
		t.Errorf("connection refused: retryable=%v retryAfter=%s, want true and 0", e.Retryable, e.RetryAfter)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		header string
		want   time.Duration
	}{
		{"", 0},
		{"0", 0},
		{"-5", 0},
		{"soon", 0},
		{"7", 7 * time.Second},
		{" 120 ", 2 * time.Minute},
		{"900", 15 * time.Minute},
		{"86400", MaxRetryAfter},
		{"99999999999999999999", 0}, // not a number Go can hold: ignored
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0},
		{now.Add(48 * time.Hour).Format(http.TimeFormat), MaxRetryAfter},
	} {
		if got := parseRetryAfter(tc.header, now); got != tc.want {
			t.Errorf("parseRetryAfter(%q) = %s, want %s", tc.header, got, tc.want)
		}
	}
}

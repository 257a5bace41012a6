package source

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/pkg/source/sourcetest"
)

// limiterClock is a hostLimiter on a clock the test moves.
func limiterClock(l HostLimits) (*hostLimiter, *time.Time) {
	now := time.Date(2026, 12, 5, 21, 0, 0, 0, time.UTC)
	h := newHostLimiter(l)
	h.now = func() time.Time { return now }
	return h, &now
}

// The transitions of one host's state, step by step: what each acquire gets, and what each release
// of a pull that ended so does to the next.
func TestHostLimiterTransitions(t *testing.T) {
	type op struct {
		key     string
		release pullOutcome // of the pull acquire started last for key; -1: acquire
		pending string      // acquire: a fragment of the KindPending message ("" = may pull)
	}
	acq := func(key, pending string) op { return op{key: key, release: -1, pending: pending} }
	rel := func(key string, o pullOutcome) op { return op{key: key, release: o} }
	const first, silent = "has not completed a pull yet", "has not answered the last pull"
	for _, tc := range []struct {
		name string
		ops  []op
	}{
		{"unproven: one at a time, then proven: no limit", []op{
			acq("a", ""), acq("b", first), rel("a", outcomeSucceeded),
			acq("b", ""), acq("c", ""), acq("d", ""), rel("b", outcomeSucceeded),
		}},
		{"an answer that is an error neither proves nor condemns", []op{
			acq("a", ""), rel("a", outcomeAnswered), acq("b", ""), acq("c", first),
		}},
		{"unproven and unanswered: suspect", []op{
			acq("a", ""), acq("b", first), rel("a", outcomeUnanswered), acq("b", ""), acq("c", silent),
		}},
		{"proven, then unanswered: suspect again", []op{
			acq("a", ""), rel("a", outcomeSucceeded), acq("b", ""), acq("c", ""), rel("b", outcomeUnanswered),
			acq("d", silent), rel("c", outcomeAbandoned), acq("d", ""), acq("e", silent),
		}},
		{"suspect, then an answer: unproven", []op{
			acq("a", ""), rel("a", outcomeUnanswered), acq("b", ""), rel("b", outcomeAnswered), acq("c", ""), acq("d", first),
		}},
		{"suspect, then a success: proven", []op{
			acq("a", ""), rel("a", outcomeUnanswered), acq("b", ""), rel("b", outcomeSucceeded), acq("c", ""), acq("d", ""),
		}},
		{"abandoned (canceled, panicked): state kept, slot freed", []op{
			acq("a", ""), rel("a", outcomeAbandoned), acq("b", ""), acq("c", first),
		}},
		{"first come, first served", []op{
			acq("a", ""), acq("b", first), acq("c", first), rel("a", outcomeAnswered),
			acq("c", first), acq("b", ""), acq("c", first),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, now := limiterClock(HostLimits{Unproven: 1})
			releases := map[string]func(pullOutcome, string){}
			for i, o := range tc.ops {
				*now = now.Add(10 * time.Millisecond)
				if o.release >= 0 {
					releases[o.key](o.release, "the pull of x: no answer within 30s")
					continue
				}
				release, err := h.acquire("reg.example.com", o.key, fmt.Sprintf("image %q", o.key))
				switch {
				case o.pending == "" && err != nil:
					t.Fatalf("step %d: %s: got %v, want to pull", i, o.key, err)
				case o.pending != "" && err == nil:
					t.Fatalf("step %d: %s may pull, want it to wait (%s)", i, o.key, o.pending)
				case err != nil:
					if err.Kind != KindPending || err.Reason != rukpakv1alpha1.ReasonUnpackPending || !err.Retryable || err.RetryAfter <= 0 ||
						!strings.Contains(err.Message, o.pending) || !strings.HasPrefix(err.Message, "waiting: registry reg.example.com ") {
						t.Fatalf("step %d: %s: got %s %q (reason %s, retryable %v, after %s), want a retryable Pending error saying %q",
							i, o.key, err.Kind, err.Message, err.Reason, err.Retryable, err.RetryAfter, o.pending)
					}
				default:
					releases[o.key] = release
				}
			}
		})
	}
}

// The message of a key that waits on a host whose last pull went unanswered says what went
// unanswered, when the key is retried, and what to check; while the first pull is in flight it is
// retried sooner.
func TestHostLimiterMessages(t *testing.T) {
	h, _ := limiterClock(HostLimits{Unproven: 1, UnprovenRetry: time.Second, SuspectRetry: 20 * time.Second})
	release, _ := h.acquire("r:5000", "a", `image "r:5000/a:1"`)
	_, err := h.acquire("r:5000", "b", `image "r:5000/b:1"`)
	if err.RetryAfter != time.Second || !strings.Contains(err.Message, "retrying in 1s or as soon as a pull ends") {
		t.Errorf("unproven: %q after %s", err.Message, err.RetryAfter)
	}
	release(outcomeUnanswered, `image "r:5000/a:1": no answer within 30s`)
	release(outcomeSucceeded, "") // a second call changes nothing
	if _, err := h.acquire("r:5000", "b", `image "r:5000/b:1"`); err != nil {
		t.Fatalf("b, first in line: %v", err)
	}
	_, err = h.acquire("r:5000", "c", `image "r:5000/c:1"`)
	want := `waiting: registry r:5000 has not answered the last pull (image "r:5000/a:1": no answer within 30s); image "r:5000/c:1" waits its turn, one pull to it at a time, ` +
		`so that the registry cannot hold every worker; retrying in 20s (if the registry stays silent, check that it is up and reachable, or change spec.source.image.ref)`
	if err == nil || err.Message != want || err.RetryAfter != 20*time.Second {
		t.Errorf("suspect: got %v, want %q after 20s", err, want)
	}
}

// However many keys ask at once, at most Unproven pulls are in flight to an unproven host, and
// every slot is given back.
func TestHostLimiterConcurrency(t *testing.T) {
	for _, limit := range []int{1, 3} {
		t.Run(fmt.Sprint(limit), func(t *testing.T) {
			h := newHostLimiter(HostLimits{Unproven: limit})
			var inFlight, peak, pulled atomic.Int32
			var wg sync.WaitGroup
			for i := range 32 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					release, err := h.acquire("stalled:1", fmt.Sprint(i), "x")
					if err != nil {
						return
					}
					n := inFlight.Add(1)
					for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
					}
					pulled.Add(1)
					inFlight.Add(-1)
					release(outcomeUnanswered, "")
				}()
			}
			wg.Wait()
			if p := peak.Load(); p > int32(limit) || p < 1 {
				t.Errorf("peak of %d pulls in flight, want 1..%d", p, limit)
			}
			if s := h.hosts["stalled:1"]; s.inFlight != 0 {
				t.Errorf("%d slots not given back", s.inFlight)
			}
		})
	}
}

// A key that has waited and stopped asking (its object deleted or changed) does not keep its place;
// forget drops it at once.
func TestHostLimiterStaleAndForgotten(t *testing.T) {
	h, now := limiterClock(HostLimits{Unproven: 1})
	release, _ := h.acquire("h", "a", "x")
	_, _ = h.acquire("h", "gone", "x")
	_, _ = h.acquire("h", "deleted", "x")
	release(outcomeAnswered, "")
	h.forget("deleted")
	if _, err := h.acquire("h", "b", "x"); err == nil {
		t.Fatal("b went before gone, which asked first")
	}
	*now = now.Add(2*DefaultUnprovenRetry + 31*time.Second)
	if _, err := h.acquire("h", "b", "x"); err != nil {
		t.Fatalf("b still waits for gone, which stopped asking: %v", err)
	}
}

// When a pull ends, the keys first in line are told they may go ahead (all of them once the host is
// proven), so that they need not wait for their RetryAfter.
func TestHostLimiterReady(t *testing.T) {
	h, _ := limiterClock(HostLimits{Unproven: 1})
	var told []string
	h.onReady(func(key string) { told = append(told, key) })
	release, _ := h.acquire("h", "a", "x")
	for _, k := range []string{"b", "c", "d"} {
		_, _ = h.acquire("h", k, "x")
	}
	release(outcomeAnswered, "")
	if fmt.Sprint(told) != "[b]" {
		t.Errorf("after an answer: told %v, want [b]", told)
	}
	told = nil
	release, _ = h.acquire("h", "b", "x")
	release(outcomeSucceeded, "")
	if fmt.Sprint(told) != "[c d]" {
		t.Errorf("once proven: told %v, want [c d]", told)
	}
}

// limitHost gives the slot back when the pull panics or is canceled, and leaves the host as it was.
func TestLimitHostReleasesOnPanicAndCancel(t *testing.T) {
	u := &DiskUnpacker{hosts: newHostLimiter(HostLimits{Unproven: 1})}
	ref, err := name.ParseReference("reg.example.com/a:1")
	if err != nil {
		t.Fatal(err)
	}
	s := &imageSource{what: "x", ref: ref, responseTimeout: time.Second}
	func() {
		defer func() { _ = recover() }()
		_, _ = u.limitHost(context.Background(), "a", s, func() (*Result, error) { panic("boom") })
	}()
	c, cancel := context.WithCancel(context.Background())
	cancel()
	_, _ = u.limitHost(c, "b", s, func() (*Result, error) { return nil, fmt.Errorf("fetching: %w", context.Canceled) })
	st := u.hosts.hosts["reg.example.com"]
	if st.inFlight != 0 || st.proven || st.unanswered != "" {
		t.Fatalf("after a panic and a cancel: %+v, want no pull in flight, not proven, not suspect", st)
	}
	// A timeout: suspect, and the detail names what timed out.
	_, _ = u.limitHost(context.Background(), "c", s, func() (*Result, error) { return nil, timeoutErr{} })
	if st.unanswered != "x: no answer within 1s" {
		t.Errorf("after a timeout: unanswered %q", st.unanswered)
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "net/http: timeout awaiting response headers" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

var _ net.Error = timeoutErr{}

func TestOutcomeOf(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithTimeout(context.Background(), -time.Second)
	defer cancel2()
	bg := context.Background()
	for _, tc := range []struct {
		ctx  context.Context
		err  error
		want pullOutcome
	}{
		{bg, nil, outcomeSucceeded},
		{bg, errors.New("404 not found"), outcomeAnswered},
		{bg, fmt.Errorf("get: %w", timeoutErr{}), outcomeUnanswered},
		{bg, &Error{Kind: KindUnreachable, Message: "registry r accepted the connection but did not answer", unanswered: true}, outcomeUnanswered},
		{expired, errors.New("whatever"), outcomeUnanswered},
		{canceled, errors.New("whatever"), outcomeAbandoned},
	} {
		if got := outcomeOf(tc.ctx, tc.err); got != tc.want {
			t.Errorf("outcomeOf(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
}

// With HostLimits, a registry that accepts connections and never answers gets one pull at a time:
// a second bundle on it waits (KindPending) without a request, and after the first pull timed out
// it is let through while a third waits, told why; a healthy registry, once proven, is not limited.
func TestImageHostLimitsStalledAndHealthy(t *testing.T) {
	stalled := sourcetest.NewRegistry(t)
	stalled.Hang(true)
	healthy := sourcetest.NewRegistry(t)
	healthy.Push(t, catalogImage(t, "catalog"), "catalogs/demo:v1")
	u := newTestUnpacker(t, nil, func(c *Config) {
		c.Timeout, c.ResponseTimeout = time.Minute, 300*time.Millisecond
		c.HostLimits = HostLimits{Unproven: 1}
	})
	firstDone := make(chan error, 1)
	go func() {
		_, err := u.Unpack(ctx(t), "catalog/s1", imageSrc(stalled.Ref("catalogs/hung:v1")), catalogOpts)
		firstDone <- err
	}()
	waitUntil(t, "the first pull to reach the stalled registry", func() bool { return stalled.CountRequests("") > 0 })
	_, err := u.Unpack(ctx(t), "catalog/s2", imageSrc(stalled.Ref("catalogs/hung:v2")), catalogOpts)
	wantPending(t, err, "registry "+stalled.Host+" has not completed a pull yet")
	// The healthy registry is not held up: its first pull goes at once.
	if _, err := u.Unpack(ctx(t), "catalog/h0", imageSrc(healthy.Ref("catalogs/demo:v1")), catalogOpts); err != nil {
		t.Fatal(err)
	}
	// The real timeout is still reported, for the pull that timed out.
	wantError(t, <-firstDone, KindUnreachable, "accepted the connection", "did not answer within 300ms")
	// s2 is first in line now; s3 waits, told that the registry did not answer.
	_, err = u.Unpack(ctx(t), "catalog/s3", imageSrc(stalled.Ref("catalogs/hung:v3")), catalogOpts)
	wantPending(t, err, "has not answered the last pull (image \""+stalled.Ref("catalogs/hung:v1")+"\": no answer within 300ms)")
	// Proven: many pulls at once.
	var wg sync.WaitGroup
	errs := make([]error, 6)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = u.Unpack(ctx(t), fmt.Sprintf("catalog/h%d", i+1), imageSrc(healthy.Ref("catalogs/demo:v1")), catalogOpts)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("a proven registry was limited: %v", err)
	}
}

func wantPending(t *testing.T, err error, fragment string) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) || e.Kind != KindPending || !strings.Contains(e.Message, fragment) {
		t.Fatalf("got %v, want a Pending error saying %q", err, fragment)
	}
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

package source

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"strings"
	"sync"
	"time"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

// Defaults of HostLimits.
const (
	DefaultUnprovenRetry = 2 * time.Second
	DefaultSuspectRetry  = 15 * time.Second
)

// KindPending: the Unpack did not start because the registry host already has as many pulls in
// flight as it may (HostLimits): it has not completed a pull yet, or its last request went
// unanswered. Error.Reason is UnpackPending and Error.RetryAfter says when to look again; nothing
// is wrong with the source itself.
const KindPending Kind = "Pending"

// HostLimits bound the image pulls in flight to one registry host that has not proven itself, so
// that a registry that accepts connections and never answers holds at most Unproven of the
// caller's workers, however many bundles it hosts. A host is proven once a pull from it succeeded,
// and stays so until one of its requests goes unanswered (a response or unpack timeout): then it is
// suspect. Pulls to a proven host are not limited. An Unpack that would exceed the limit does not
// wait: it returns at once an Error of KindPending (reason UnpackPending) with RetryAfter set, and
// waiting keys are let through in the order they first waited. The state is in memory only.
type HostLimits struct {
	// Unproven is how many pulls may be in flight at once to a host that is not proven (no pull
	// from it succeeded yet, or its last request went unanswered). Zero (the default) disables the
	// limits.
	Unproven int
	// UnprovenRetry is when a key deferred while the host has not answered yet is looked at again
	// (default DefaultUnprovenRetry); OnHostReady usually retries it sooner.
	UnprovenRetry time.Duration
	// SuspectRetry is when a key deferred while the host's last request went unanswered is looked
	// at again (default DefaultSuspectRetry).
	SuspectRetry time.Duration
}

func (l HostLimits) withDefaults() HostLimits {
	if l.UnprovenRetry <= 0 {
		l.UnprovenRetry = DefaultUnprovenRetry
	}
	if l.SuspectRetry <= 0 {
		l.SuspectRetry = DefaultSuspectRetry
	}
	return l
}

// pullOutcome is how a limited pull ended, for the host's state.
type pullOutcome int

const (
	// outcomeAbandoned: canceled, or the pull panicked: the host's state is left as it was.
	outcomeAbandoned pullOutcome = iota
	// outcomeAnswered: the host answered, with an error (not found, unauthorized, ...).
	outcomeAnswered
	// outcomeSucceeded: the pull succeeded; the host is proven.
	outcomeSucceeded
	// outcomeUnanswered: a request timed out; the host is suspect.
	outcomeUnanswered
)

// outcomeOf classifies the result of a pull that ran under ctx.
func outcomeOf(ctx context.Context, err error) pullOutcome {
	if err == nil {
		return outcomeSucceeded
	}
	if errors.Is(ctx.Err(), context.Canceled) {
		return outcomeAbandoned
	}
	var (
		e    *Error
		nerr net.Error
	)
	if (errors.As(err, &e) && e.unanswered) || errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) ||
		(errors.As(err, &nerr) && nerr.Timeout()) || strings.Contains(err.Error(), "timeout awaiting response headers") {
		return outcomeUnanswered
	}
	return outcomeAnswered
}

// hostLimiter keeps the state of each registry host.
type hostLimiter struct {
	limits HostLimits
	now    func() time.Time

	mu    sync.Mutex
	hosts map[string]*hostState
	// ready, when set, is told the keys that may now go ahead (outside mu).
	ready func(key string)
}

type hostState struct {
	proven   bool
	inFlight int
	// unanswered, when set, says that the host's last request went unanswered: what timed out.
	unanswered string
	// waiting are the deferred keys: when each first and last asked.
	waiting map[string]*waiter
}

type waiter struct{ first, last time.Time }

func newHostLimiter(l HostLimits) *hostLimiter {
	return &hostLimiter{limits: l.withDefaults(), now: time.Now, hosts: map[string]*hostState{}}
}

func (h *hostLimiter) state(host string) *hostState {
	s := h.hosts[host]
	if s == nil {
		s = &hostState{waiting: map[string]*waiter{}}
		h.hosts[host] = s
	}
	return s
}

// retryFor is when a key deferred on s is looked at again.
func (h *hostLimiter) retryFor(s *hostState) time.Duration {
	if s.unanswered != "" {
		return h.limits.SuspectRetry
	}
	return h.limits.UnprovenRetry
}

// inLine returns the waiting keys that still ask (each asked again within its retry interval and
// a grace period), oldest first; the others are forgotten. The grace is generous: a key that asks
// again late (its reconcile waited for a loaded API server) would lose its place, and one that
// stopped asking without Cleanup (its source changed) keeps the slot idle for at most that long.
func (h *hostLimiter) inLine(s *hostState, now time.Time) []string {
	grace := 2*h.retryFor(s) + 30*time.Second
	var keys []string
	for k, w := range s.waiting {
		if now.Sub(w.last) > grace {
			delete(s.waiting, k)
			continue
		}
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := s.waiting[keys[i]], s.waiting[keys[j]]
		if !a.first.Equal(b.first) {
			return a.first.Before(b.first)
		}
		return keys[i] < keys[j]
	})
	return keys
}

// acquire lets key pull from host now, returning the release to call once with the pull's outcome,
// or a KindPending Error when key must wait. what names the image, for the message.
func (h *hostLimiter) acquire(host, key, what string) (func(o pullOutcome, detail string), *Error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.state(host)
	limited := !s.proven || s.unanswered != ""
	if limited {
		now := h.now()
		line := h.inLine(s, now)
		free := h.limits.Unproven - s.inFlight
		pos := indexOf(line, key)
		if free <= 0 || (pos < 0 && len(line) >= free) || pos >= free {
			w := s.waiting[key]
			if w == nil {
				w = &waiter{first: now}
				s.waiting[key] = w
			}
			w.last = now
			return nil, h.pending(host, s, what)
		}
	}
	delete(s.waiting, key)
	s.inFlight++
	var once sync.Once
	return func(o pullOutcome, detail string) { once.Do(func() { h.release(host, o, detail) }) }, nil
}

func indexOf(keys []string, key string) int {
	for i, k := range keys {
		if k == key {
			return i
		}
	}
	return -1
}

// release ends a pull to host: the host's state follows its outcome (detail says what went
// unanswered), and the keys first in line are told they may go ahead.
func (h *hostLimiter) release(host string, o pullOutcome, detail string) {
	h.mu.Lock()
	s := h.state(host)
	s.inFlight--
	switch o {
	case outcomeSucceeded:
		s.proven, s.unanswered = true, ""
	case outcomeAnswered:
		s.unanswered = ""
	case outcomeUnanswered:
		s.unanswered = detail
		if detail == "" {
			s.unanswered = "a request timed out"
		}
	}
	var next []string
	if h.ready != nil {
		line := h.inLine(s, h.now())
		n := len(line)
		if (!s.proven || s.unanswered != "") && n > h.limits.Unproven-s.inFlight {
			n = max(0, h.limits.Unproven-s.inFlight)
		}
		next = line[:n]
	}
	ready := h.ready
	h.mu.Unlock()
	for _, k := range next {
		ready(k)
	}
}

// onReady sets the function told the keys that may go ahead.
func (h *hostLimiter) onReady(f func(key string)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ready = f
}

// forget drops key from every line (its object was deleted).
func (h *hostLimiter) forget(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, s := range h.hosts {
		delete(s.waiting, key)
	}
}

// pending is the Error of a key that must wait for host: what is happening and what to do.
func (h *hostLimiter) pending(host string, s *hostState, what string) *Error {
	retry := h.retryFor(s)
	atATime := "one pull to it at a time"
	if h.limits.Unproven > 1 {
		atATime = fmt.Sprintf("%d pulls to it at a time", h.limits.Unproven)
	}
	var why string
	if s.unanswered != "" {
		why = fmt.Sprintf("registry %s has not answered the last pull (%s); %s waits its turn, %s, so that the registry cannot hold every worker; retrying in %s (if the registry stays silent, check that it is up and reachable, or change %s)",
			host, s.unanswered, what, atATime, retry, imageRefField)
	} else {
		why = fmt.Sprintf("registry %s has not completed a pull yet; %s waits its turn, %s until one succeeds; retrying in %s or as soon as a pull ends",
			host, what, atATime, retry)
	}
	e := newError(KindPending, nil, "waiting: %s", why)
	e.Reason = rukpakv1alpha1.ReasonUnpackPending
	e.RetryAfter = retry
	return e
}

// limitHost runs fetch, a pull from the registry host of s for key, within Config.HostLimits.
// The host's slot is released however fetch ends, a panic included.
func (u *DiskUnpacker) limitHost(ctx context.Context, key string, s *imageSource, fetch func() (*Result, error)) (*Result, error) {
	if u.hosts == nil {
		return fetch()
	}
	release, perr := u.hosts.acquire(s.ref.Context().RegistryStr(), key, s.what)
	if perr != nil {
		return nil, perr
	}
	o, detail := outcomeAbandoned, ""
	defer func() { release(o, detail) }()
	res, err := fetch()
	if o = outcomeOf(ctx, err); o == outcomeUnanswered {
		detail = fmt.Sprintf("%s: no answer within %s", s.what, s.responseTimeout)
		if ctx.Err() != nil {
			detail = fmt.Sprintf("%s: timed out after %s", s.what, timeoutOf(ctx))
		}
	}
	return res, err
}

// HostReadyNotifier is implemented by an Unpacker with HostLimits: f is called with the key of
// each deferred Unpack (KindPending) that may go ahead now, so that the caller retries it without
// waiting for its RetryAfter. f must not block.
type HostReadyNotifier interface {
	OnHostReady(f func(key string))
}

var _ HostReadyNotifier = (*DiskUnpacker)(nil)

// OnHostReady implements HostReadyNotifier; without HostLimits f is never called.
func (u *DiskUnpacker) OnHostReady(f func(key string)) {
	if u.hosts != nil {
		u.hosts.onReady(f)
	}
}

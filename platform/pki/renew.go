package pki

import (
	"context"
	"crypto/x509"
	"time"
)

// RenewAt is when c is due for renewal: when a third of its validity is left.
func RenewAt(c *x509.Certificate) time.Time {
	return c.NotAfter.Add(-c.NotAfter.Sub(c.NotBefore) / 3)
}

// NeedsRenewal reports whether c should be replaced at now: from RenewAt on, or when it is not valid
// yet.
func NeedsRenewal(c *x509.Certificate, now time.Time) bool {
	return now.Before(c.NotBefore) || !now.Before(RenewAt(c))
}

// NextCheck is when to look again at something due at due, looking at least every recheck (so that
// a change someone else made is followed): due, but not before now nor after now+recheck. A zero due
// (nothing known) gives now+recheck.
func NextCheck(now, due time.Time, recheck time.Duration) time.Time {
	if due.IsZero() {
		return now.Add(recheck)
	}
	return now.Add(min(recheck, max(0, due.Sub(now))))
}

// Clock is the time source of a renewal loop (a fake in tests).
type Clock interface {
	Now() time.Time
	After(time.Duration) <-chan time.Time
}

// RealClock is the system clock.
var RealClock Clock = realClock{}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Loop runs renewal passes: each pass returns when the next one is due, and Loop sleeps until then.
// A pass does its own logging and decides its own retry delay after a failure (it is due again then).
type Loop struct {
	Clock Clock
	// Triggers, when not nil, ends a sleep early: the next pass runs at once (e.g. a watched Secret
	// changed). OnTrigger, when set, is called first.
	Triggers  <-chan struct{}
	OnTrigger func()
}

// Run runs pass first at first (the zero time: at once, before any sleep), then whenever it is due,
// until ctx is done.
func (l Loop) Run(ctx context.Context, first time.Time, pass func(context.Context) time.Time) {
	next := first
	if next.IsZero() {
		next = pass(ctx)
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-l.Clock.After(max(0, next.Sub(l.Clock.Now()))):
		case <-l.Triggers:
			if l.OnTrigger != nil {
				l.OnTrigger()
			}
		}
		next = pass(ctx)
	}
}

// The shape every certificate rotator of OLM v1 shares (rukpak's bundle-webhook CA and the
// platform certificates): a Loop whose passes look again at least every RotationRecheck, wait
// RotationRetry after a failure, backdate what they issue by Backdate, and keep a replaced CA
// trusted while KeepReplacedCA says so.
const (
	// RotationRecheck bounds how long a rotator sleeps: it re-reads its Secrets at least this often,
	// so that it follows a change someone else made (another replica, a helm upgrade, a person).
	RotationRecheck = time.Hour
	// RotationRetry is the wait after a failed pass.
	RotationRetry = time.Minute
	// Backdate is subtracted from now for the NotBefore of what a rotator issues, tolerating clock
	// skew between nodes.
	Backdate = time.Hour
)

// KeepReplacedCA is the rule for a CA that a rotation replaced: it stays trusted (beside the new
// one, so that clients and servers still on it keep working while mounted Secrets and caBundles
// follow) until it expires, and is dropped from then on.
func KeepReplacedCA(replaced *x509.Certificate, now time.Time) bool {
	return now.Before(replaced.NotAfter)
}

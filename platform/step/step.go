// Package step is the reconcile vocabulary that catalogd, rukpak and operator-controller share: a
// failed step names the condition it fails, the reason and whether retrying can help (Error), and
// Result turns it into what controller-runtime expects. Which Events a change of conditions gives is
// the conditionevents package.
package step

import (
	"errors"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Error is a failed reconcile step.
type Error struct {
	// Condition is the condition type the step fails, e.g. "Unpacked".
	Condition string
	// Reason is the condition reason, e.g. "UnpackFailed".
	Reason string
	// Terminal: retrying cannot help; only a change of the object (or of what it names) can. A
	// terminal Error matches controller-runtime's terminal error (errors.Is(err,
	// reconcile.TerminalError(nil))), so the controller neither retries nor backs off.
	Terminal bool
	// RetryAfter, when set, looks again after this long instead of backing off (a server said when
	// to come back, or a known re-check interval).
	RetryAfter time.Duration
	// Err is what went wrong; its text is the condition message.
	Err error
}

// Failed is a step that failed with reason on condition; retrying (with backoff) may help.
func Failed(condition, reason string, err error) *Error {
	return &Error{Condition: condition, Reason: reason, Err: err}
}

// Terminal is a step that failed with reason on condition; retrying cannot help.
func Terminal(condition, reason string, err error) *Error {
	return &Error{Condition: condition, Reason: reason, Terminal: true, Err: err}
}

// After sets RetryAfter (when d > 0) and returns e.
func (e *Error) After(d time.Duration) *Error {
	if d > 0 {
		e.RetryAfter = d
	}
	return e
}

func (e *Error) Error() string { return e.Err.Error() }

// Unwrap gives Err and, for a terminal Error, controller-runtime's terminal error around it.
func (e *Error) Unwrap() []error {
	if e.Terminal {
		return []error{e.Err, reconcile.TerminalError(e.Err)}
	}
	return []error{e.Err}
}

// As finds the first *Error in err's chain.
func As(err error) (*Error, bool) {
	var se *Error
	ok := errors.As(err, &se)
	return se, ok
}

// IsTerminal is true when retrying err cannot help: a terminal Error, or any error wrapping
// controller-runtime's terminal error.
func IsTerminal(err error) bool { return err != nil && errors.Is(err, reconcile.TerminalError(nil)) }

// Result is what Reconcile returns after its steps ended with err, when ok is the result of a
// reconcile that succeeded (its periodic re-check):
//   - nil: ok;
//   - an Error with RetryAfter: look again then, without backoff;
//   - terminal while ok polls (RequeueAfter > 0): ok, since the next poll may find the input fixed
//     (an image republished under the same tag);
//   - terminal otherwise: the terminal error, so controller-runtime records it and does not retry;
//   - any other error: the error, so the rate limiter backs off.
func Result(err error, ok ctrl.Result) (ctrl.Result, error) {
	if err == nil {
		return ok, nil
	}
	if se, found := As(err); found && se.RetryAfter > 0 {
		return ctrl.Result{RequeueAfter: se.RetryAfter}, nil
	}
	if IsTerminal(err) {
		if ok.RequeueAfter > 0 {
			return ok, nil
		}
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, err
}

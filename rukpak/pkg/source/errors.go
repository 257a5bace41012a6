package source

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ReasonUnpackFailed is the condition reason every unpack error carries: the Unpacked condition of a
// Catalog or BundleDeployment is False with this reason and Error's message.
const ReasonUnpackFailed = "UnpackFailed"

// Kind classifies an unpack failure more finely than the condition reason: use it for metrics, logs
// and tests (the message already says what to fix).
type Kind string

const (
	// KindInvalidSource: the source in the spec cannot work as written (a malformed image reference
	// or URL, an unsupported scheme, a bad path). Fix the spec.
	KindInvalidSource Kind = "InvalidSource"
	// KindNotFound: something the source names does not exist: an image, tag or digest; a URL; a
	// ConfigMap or Secret; a git branch, tag, commit or directory. It may appear later.
	KindNotFound Kind = "NotFound"
	// KindUnauthorized: the server refused the credentials, or there were none and it wants some.
	KindUnauthorized Kind = "Unauthorized"
	// KindUnreachable: the server could not be reached, timed out, or answered with a server error.
	KindUnreachable Kind = "Unreachable"
	// KindInvalidContent: the content was fetched but is unsafe or malformed: tar entries escaping
	// the content directory, symlinks or hardlinks pointing outside it, an artifact of the wrong
	// kind, a missing directory inside an image.
	KindInvalidContent Kind = "InvalidContent"
	// KindTooLarge: the content exceeds Limits (bytes after decompression, or number of files).
	KindTooLarge Kind = "TooLarge"
	// KindDigestMismatch: bytes received from a registry do not match their digest (corruption in
	// transit, or a registry that serves something other than what it claims).
	KindDigestMismatch Kind = "DigestMismatch"
	// KindUnsigned: spec.source.image.verify or the cluster-wide default (Config.RequireSignaturesSecret)
	// requires a signature and the image has none (Error.Reason is ReasonUnsigned). Retried with
	// backoff: the signature may be pushed after the image. Also a Git, HTTP or ConfigMaps source
	// under the cluster-wide default, which nothing can verify: not retried.
	KindUnsigned Kind = "Unsigned"
	// KindSignatureInvalid: the image's signatures do not satisfy spec.source.image.verify (or the
	// cluster-wide default): made with another key, tampered with, malformed, or signing another
	// digest (Error.Reason is ReasonSignatureInvalid). Not retried: a new signature or a change of
	// the spec is needed.
	KindSignatureInvalid Kind = "SignatureInvalid"
	// KindInternal: a local failure (disk full, permissions of the cache directory, a misconfigured
	// Unpacker).
	KindInternal Kind = "Internal"
)

// Error is the error every Unpack returns. Its message names the image, URL, ConfigMap, Secret or
// repository involved and the spec field to check, so a controller can put it in a condition as is.
type Error struct {
	// Kind classifies the failure.
	Kind Kind
	// Reason is the condition reason to report: ReasonUnpackFailed, or ReasonUnsigned and
	// ReasonSignatureInvalid for the signature policy (ReasonOf).
	Reason string
	// Retryable is true when trying again later, with the same spec, can succeed: the server may
	// come back, a missing object may be created, credentials may be fixed in their Secret. When
	// false only a change of the spec (or of the content at its source) can help; controllers
	// should report the error and wait for a change instead of retrying with backoff.
	Retryable bool
	// RetryAfter, when not zero, is how long the server asked to wait before trying again (the
	// Retry-After header of a 429 or 503 answer, at most MaxRetryAfter). Controllers should look
	// again after that long rather than after their own backoff.
	RetryAfter time.Duration
	// Message is the complete, actionable message.
	Message string
	// Err is the underlying error, if any.
	Err error
	// unanswered: a server accepted the request and did not answer in time (a response or unpack
	// timeout), for HostLimits.
	unanswered bool
}

func (e *Error) Error() string { return e.Message }

func (e *Error) Unwrap() error { return e.Err }

// newError builds an Error. Kinds that describe the input itself are not retryable; kinds that
// describe the environment are.
func newError(kind Kind, err error, format string, args ...any) *Error {
	// Condition messages are one line; servers' error bodies often end in a newline.
	msg := strings.Join(strings.FieldsFunc(fmt.Sprintf(format, args...), func(r rune) bool { return r == '\n' || r == '\r' }), " ")
	return &Error{
		Kind:      kind,
		Reason:    ReasonUnpackFailed,
		Retryable: retryableKind(kind),
		Message:   msg,
		Err:       err,
	}
}

func retryableKind(k Kind) bool {
	switch k {
	case KindInvalidSource, KindInvalidContent, KindTooLarge, KindSignatureInvalid:
		return false
	}
	return true
}

// IsRetryable reports whether err (or an Error it wraps) can be fixed by retrying later with the
// same spec. Errors that are not an *Error are assumed retryable.
func IsRetryable(err error) bool {
	var e *Error
	if errors.As(err, &e) {
		return e.Retryable
	}
	return err != nil
}

// RetryAfterOf returns the RetryAfter of err (or of an Error it wraps), or zero.
func RetryAfterOf(err error) time.Duration {
	var e *Error
	if errors.As(err, &e) && e.Retryable {
		return e.RetryAfter
	}
	return 0
}

// MaxRetryAfter bounds the wait a server's Retry-After header can ask for.
const MaxRetryAfter = 15 * time.Minute

// parseRetryAfter reads a Retry-After header: delay-seconds or an HTTP date. It returns zero when
// the header is absent, malformed or in the past, and at most MaxRetryAfter.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	var d time.Duration
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		d = MaxRetryAfter
		if secs < int64(MaxRetryAfter/time.Second) {
			d = time.Duration(secs) * time.Second
		}
	} else if at, err := http.ParseTime(v); err == nil {
		d = at.Sub(now).Round(time.Second)
	}
	return min(max(d, 0), MaxRetryAfter)
}

// retryLater says when a retryable error will be retried, for messages: after the server's
// Retry-After, or with backoff.
func retryLater(retryAfter time.Duration) string {
	if retryAfter > 0 {
		return fmt.Sprintf("will retry in %s, as the server asked (Retry-After)", retryAfter)
	}
	return "will retry with backoff"
}

// ReasonOf returns the condition reason of err (or of an Error it wraps): Unsigned or
// SignatureInvalid for a signature policy failure, otherwise ReasonUnpackFailed.
func ReasonOf(err error) string {
	var e *Error
	if errors.As(err, &e) && e.Reason != "" {
		return e.Reason
	}
	return ReasonUnpackFailed
}

// KindOf returns the Kind of err, or KindInternal when err is not an *Error.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return KindInternal
}

// asError returns err when it already is an *Error (keeping its message), and otherwise classifies
// it with the given fallback kind and message prefix.
func asError(err error, fallback Kind, format string, args ...any) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return newError(fallback, err, "%s: %v", fmt.Sprintf(format, args...), err)
}

// timeoutError explains that ctx ran out while fetching what.
func timeoutError(ctx context.Context, err error, timeout time.Duration, what, field string) *Error {
	if errors.Is(ctx.Err(), context.Canceled) {
		return newError(KindUnreachable, err, "fetching %s was canceled", what)
	}
	e := newError(KindUnreachable, err, "fetching %s timed out after %s (is the server reachable and answering? check %s)", what, timeout, field)
	e.unanswered = true
	return e
}

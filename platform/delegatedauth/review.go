package delegatedauth

import (
	"context"
	"errors"
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
)

// reviewBackoff paces the attempts at a TokenReview or SubjectAccessReview: four, 0.4 s, 0.8 s and
// 1.6 s apart (±10 %).
var reviewBackoff = wait.Backoff{Duration: 400 * time.Millisecond, Factor: 2, Jitter: 0.1, Steps: 4}

// reviewTimeout bounds one attempt.
const reviewTimeout = 10 * time.Second

// cacheSize bounds each cache of review results.
const cacheSize = 4096

// withRetry calls fn until it succeeds, fails with an error that retrying cannot fix, backoff runs
// out or ctx is done; it returns fn's last error.
func withRetry(ctx context.Context, backoff wait.Backoff, fn func(context.Context) error) error {
	var last error
	err := wait.ExponentialBackoffWithContext(ctx, backoff, func(ctx context.Context) (bool, error) {
		attemptCtx, cancel := context.WithTimeout(ctx, reviewTimeout)
		defer cancel()
		last = fn(attemptCtx)
		switch {
		case last == nil:
			return true, nil
		case ctx.Err() == nil && retriable(last):
			return false, nil
		default:
			return false, last
		}
	})
	if err != nil && last != nil {
		return last
	}
	return err
}

// retriable tells errors that may pass: the API server could not be reached or answered with a
// server error or 429. Other API errors (e.g. 403: the caller may not create reviews) are final.
func retriable(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return true
	}
	code := status.Status().Code
	return code == http.StatusTooManyRequests || code >= http.StatusInternalServerError
}

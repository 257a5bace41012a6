package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// poll calls check every o.PollInterval until it reports done, fails, or timeout passes. On timeout
// the error carries the last state check described.
func (o *options) poll(ctx context.Context, timeout time.Duration, check func(context.Context) (done bool, state string, err error)) error {
	last := ""
	err := wait.PollUntilContextTimeout(ctx, o.PollInterval, timeout, true, func(ctx context.Context) (bool, error) {
		done, state, err := check(ctx)
		if state != "" {
			last = state
		}
		return done, err
	})
	if err != nil && wait.Interrupted(err) && !errors.Is(ctx.Err(), context.Canceled) {
		return fmt.Errorf("timed out after %s; last state: %s", timeout, last)
	}
	return err
}

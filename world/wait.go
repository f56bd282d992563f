package world

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// PollInterval is how often WaitFor asks its condition.
const PollInterval = 25 * time.Millisecond

// ErrTimeout is wrapped by the error WaitFor returns when its timeout passes.
var ErrTimeout = errors.New("timed out")

// WaitFor asks cond every PollInterval, starting at once, until it returns
// true. An error from cond is not fatal: polling goes on, and the last error
// is reported if the timeout passes. The error then reads "timed out after
// <timeout> waiting for <what> (last error: …)" and wraps ErrTimeout and the
// last cond error. If ctx ends first, the error wraps ctx.Err(). cond
// receives a context that ends at the timeout.
func WaitFor(ctx context.Context, timeout time.Duration, what string, cond func(ctx context.Context) (bool, error)) error {
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ticker := time.NewTicker(PollInterval)
	defer ticker.Stop()
	var lastErr error
	for {
		ok, err := cond(wctx)
		if err != nil {
			lastErr = err
		} else if ok {
			return nil
		}
		select {
		case <-wctx.Done():
			if ctx.Err() != nil {
				return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
			}
			if lastErr != nil {
				return fmt.Errorf("%w after %s waiting for %s (last error: %w)", ErrTimeout, timeout, what, lastErr)
			}
			return fmt.Errorf("%w after %s waiting for %s", ErrTimeout, timeout, what)
		case <-ticker.C:
		}
	}
}

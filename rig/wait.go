package rig

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// PollInterval is how often WaitFor asks its condition at first.
const PollInterval = 25 * time.Millisecond

// MaxPollInterval is how far WaitFor's interval grows in a long wait: a
// tenth of the time waited so far, between PollInterval and this. A look
// costs the services CPU (a settle's reads every table and the queues), so
// a wait of 30 s asks about 320 times instead of 1,200, while a short wait
// is answered as fast as before.
const MaxPollInterval = 100 * time.Millisecond

// ErrTimeout is wrapped by the error WaitFor returns when its timeout passes.
var ErrTimeout = errors.New("timed out")

// WaitFor asks cond at once, then every PollInterval, slowing to every
// MaxPollInterval as the wait grows (pollAfter), until it returns true. An
// error from cond is not fatal: polling goes on, and the last error is
// reported if the timeout passes. The error then reads "timed out after
// <timeout> waiting for <what> (last error: …)" and wraps ErrTimeout and the
// last cond error. If ctx ends first, the error wraps ctx.Err(). cond
// receives a context that ends at the timeout.
func WaitFor(ctx context.Context, timeout time.Duration, what string, cond func(ctx context.Context) (bool, error)) error {
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	timer := time.NewTimer(PollInterval)
	defer timer.Stop()
	var lastErr error
	for {
		asked := time.Now()
		ok, err := cond(wctx)
		if err != nil {
			lastErr = err
		} else if ok {
			return nil
		}
		timer.Reset(max(pollAfter(asked.Sub(start))-time.Since(asked), 0))
		select {
		case <-wctx.Done():
			if ctx.Err() != nil {
				return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
			}
			if lastErr != nil {
				return fmt.Errorf("%w after %s waiting for %s (last error: %w)", ErrTimeout, timeout, what, lastErr)
			}
			return fmt.Errorf("%w after %s waiting for %s", ErrTimeout, timeout, what)
		case <-timer.C:
		}
	}
}

// pollAfter is the interval between the look begun after waited and the
// next one.
func pollAfter(waited time.Duration) time.Duration {
	return min(max(PollInterval, waited/10), MaxPollInterval)
}

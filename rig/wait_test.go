package rig

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestWaitForTimeoutReportsLastError(t *testing.T) {
	t.Parallel()
	boom := errors.New("relay not ready")
	var calls atomic.Int32
	// The timeout leaves room for many polls (every PollInterval) even
	// when the machine stalls the test for a while.
	err := WaitFor(t.Context(), time.Second, "3 rows PUBLISHED", func(context.Context) (bool, error) {
		calls.Add(1)
		return false, boom
	})
	if err == nil {
		t.Fatal("WaitFor returned nil for a condition that never holds")
	}
	want := "timed out after 1s waiting for 3 rows PUBLISHED (last error: relay not ready)"
	if err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
	if !errors.Is(err, ErrTimeout) || !errors.Is(err, boom) {
		t.Errorf("error %v does not wrap ErrTimeout and the last cond error", err)
	}
	if calls.Load() < 2 {
		t.Errorf("cond called %d times, want polling", calls.Load())
	}
}

func TestWaitForTimeoutWithoutError(t *testing.T) {
	t.Parallel()
	err := WaitFor(t.Context(), 50*time.Millisecond, "nothing", func(context.Context) (bool, error) { return false, nil })
	if err == nil || err.Error() != "timed out after 50ms waiting for nothing" {
		t.Errorf("error = %v", err)
	}
}

func TestWaitForKeepsPollingThroughErrors(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	err := WaitFor(t.Context(), 5*time.Second, "third call", func(context.Context) (bool, error) {
		if calls.Add(1) < 3 {
			return false, errors.New("not yet")
		}
		return true, nil
	})
	if err != nil || calls.Load() != 3 {
		t.Errorf("WaitFor = %v after %d calls, want nil after 3", err, calls.Load())
	}
}

func TestWaitForParentContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err := WaitFor(ctx, 5*time.Second, "never", func(context.Context) (bool, error) { return false, nil })
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "never") {
		t.Errorf("error = %v, want a cancellation naming what was awaited", err)
	}
}

func TestPollAfterSlowsInLongWaits(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ waited, want time.Duration }{
		{0, PollInterval},
		{100 * time.Millisecond, PollInterval},
		{400 * time.Millisecond, 40 * time.Millisecond},
		{time.Second, MaxPollInterval},
		{30 * time.Second, MaxPollInterval},
	} {
		if got := pollAfter(c.waited); got != c.want {
			t.Errorf("pollAfter(%v) = %v, want %v", c.waited, got, c.want)
		}
	}
}

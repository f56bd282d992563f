package periodic

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// TestLoopRunsAtOnceRepeatsAndStops: fn runs at once, again on the ticker,
// never after Stop returns; Stop is safe twice and before Start.
func TestLoopRunsAtOnceRepeatsAndStops(t *testing.T) {
	t.Parallel()
	var l Loop
	l.Stop() // before Start: no-op
	var n atomic.Int64
	ran := make(chan struct{}, 100)
	if err := l.Start(context.Background(), time.Millisecond, func(context.Context) {
		n.Add(1)
		ran <- struct{}{}
	}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		select {
		case <-ran:
		case <-time.After(5 * time.Second):
			t.Fatalf("fn ran %d times, want at least 3", n.Load())
		}
	}
	if err := l.Start(context.Background(), time.Millisecond, func(context.Context) {}); !errors.Is(err, ErrStarted) {
		t.Fatalf("second Start: %v, want ErrStarted", err)
	}
	l.Stop()
	after := n.Load()
	l.Stop()
	if n.Load() != after {
		t.Fatalf("fn ran after Stop returned")
	}
}

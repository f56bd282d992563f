// Package periodic owns the lifecycle of the pipeline's timer loops (the
// relay and the cleanup scheduler), in the shape of river's
// startstop.Service: Start returns once the loop runs, Stop waits for the
// run in progress and is safe to call twice or before Start.
package periodic

import (
	"context"
	"errors"
	"sync"
	"time"
)

// ErrStarted is returned by a second Start.
var ErrStarted = errors.New("loop already started")

// Loop runs a function now and then every interval.
type Loop struct {
	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// Start runs fn at once and then every interval until Stop or ctx ends.
func (l *Loop) Start(ctx context.Context, interval time.Duration, fn func(ctx context.Context)) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done != nil {
		return ErrStarted
	}
	ctx, l.cancel = context.WithCancel(ctx)
	l.done = make(chan struct{})
	go func(done chan struct{}) {
		defer close(done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			fn(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}(l.done)
	return nil
}

// Stop ends the loop and waits for the run in progress. Safe to call twice
// or before Start.
func (l *Loop) Stop() {
	l.mu.Lock()
	cancel, done := l.cancel, l.done
	l.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	<-done
}

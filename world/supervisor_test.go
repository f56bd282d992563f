package world

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// TestSupervisorRestartsUntilStopped: a supervised pod that dies is
// restarted and its successor registered; after StopAll nothing restarts
// and every pod has exited.
func TestSupervisorRestartsUntilStopped(t *testing.T) {
	t.Parallel()
	s := NewSupervisor(func(string, string, ...any) {})
	first := startChild(t, "worker-1", "serve", nil)
	s.Add(first)
	var restarts atomic.Int32
	restarted := make(chan *Pod, 1)
	s.Supervise(first, func(ctx context.Context, p *Pod) (*Pod, error) {
		restarts.Add(1)
		np := startChild(t, "worker-2", "serve", nil)
		s.Add(np)
		restarted <- np
		return np, nil
	})
	waitEvent(t, first, "child.ready")
	if err := first.Kill(); err != nil {
		t.Fatal(err)
	}
	var second *Pod
	select {
	case second = <-restarted:
	case <-time.After(30 * time.Second):
		t.Fatal("the killed pod was not restarted")
	}
	if got, err := s.Pod("worker-2"); err != nil || got != second {
		t.Fatalf("Pod(worker-2) = %v, %v: the successor is not registered", got, err)
	}
	waitEvent(t, second, "child.ready")
	s.StopAll(5 * time.Second)
	for _, p := range s.Pods() {
		if !isDone(p) {
			t.Errorf("%s still running after StopAll", p.Name())
		}
	}
	if n := restarts.Load(); n != 1 {
		t.Errorf("restarted %d times, want 1 (StopAll ends supervision)", n)
	}
}

// TestSupervisorHasNoRestartBudget: a pod that dies at once, as one does
// while the broker it needs is restarting, is restarted for as long as the
// run lasts — well past the 20 restarts a budget once allowed, after which
// a slow broker restart left the pipeline without pods and the run stuck.
func TestSupervisorHasNoRestartBudget(t *testing.T) {
	t.Parallel()
	const want = 25
	s := NewSupervisor(func(string, string, ...any) {})
	s.Backoff, s.MaxBackoff = time.Millisecond, time.Millisecond
	first := startChild(t, "worker-1", "env", nil)
	s.Add(first)
	var restarts atomic.Int32
	enough := make(chan struct{})
	s.Supervise(first, func(ctx context.Context, p *Pod) (*Pod, error) {
		n := restarts.Add(1)
		np := startChild(t, "worker-1", "env", nil)
		s.Add(np)
		if n == want {
			close(enough)
		}
		return np, nil
	})
	select {
	case <-enough:
	case <-time.After(2 * time.Minute):
		t.Fatalf("restarted %d times, then stopped restarting", restarts.Load())
	}
	s.StopAll(5 * time.Second)
}

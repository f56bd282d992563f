package rig

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
		if !isExited(p) {
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

// TestSupervisorReleaseAndRestarting: a released pod's exit is not a crash
// (nothing restarts it), a dead supervised pod counts as restarting until
// its successor is up, and Supervised lists the running kept pods.
func TestSupervisorReleaseAndRestarting(t *testing.T) {
	t.Parallel()
	s := NewSupervisor(func(string, string, ...any) {})
	s.Backoff, s.MaxBackoff = time.Millisecond, time.Millisecond
	released := startChild(t, "worker-1", "serve", nil)
	kept := startChild(t, "worker-2", "serve", nil)
	s.Add(released)
	s.Add(kept)
	asked := make(chan *Pod, 2)
	proceed := make(chan struct{})
	restart := func(ctx context.Context, p *Pod) (*Pod, error) {
		asked <- p
		<-proceed
		np := startChild(t, "worker-3", "serve", nil)
		s.Add(np)
		return np, nil
	}
	s.Supervise(released, restart)
	s.Supervise(kept, restart)
	if got := s.Supervised(); len(got) != 2 {
		t.Fatalf("supervised %d pods, want 2", len(got))
	}
	s.Release(released)
	if err := released.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := kept.Kill(); err != nil {
		t.Fatal(err)
	}
	if p := <-asked; p != kept {
		t.Fatalf("restarted %s, want worker-2 (worker-1 was released)", p.Name())
	}
	if n := s.Restarting(); n != 1 {
		t.Fatalf("restarting %d while the successor starts, want 1", n)
	}
	close(proceed)
	successor := waitSupervised(t, s, "worker-3")
	if n := s.Restarting(); n != 0 {
		t.Fatalf("restarting %d once the successor is up, want 0", n)
	}
	waitEvent(t, successor, "child.ready")
	s.StopAll(5 * time.Second)
	select {
	case p := <-asked:
		t.Fatalf("%s restarted after StopAll or after its release", p.Name())
	default:
	}
}

// waitSupervised waits until the pod called name is the only one kept.
func waitSupervised(t *testing.T, s *Supervisor, name string) *Pod {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if got := s.Supervised(); len(got) == 1 && got[0].Name() == name && s.Restarting() == 0 {
			return got[0]
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("%s never became the one supervised pod", name)
	return nil
}

package rig

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Supervisor keeps a run's pods: it knows every pod started, restarts the
// supervised ones when they die, as a deployment would, and stops them
// all at the end of the run.
type Supervisor struct {
	logf func(source, format string, args ...any)
	// Backoff is the delay before a dead pod's first restart; it doubles
	// with each restart up to MaxBackoff. Set them before Supervise.
	Backoff, MaxBackoff time.Duration

	mu         sync.Mutex
	stopping   bool
	pods       []*Pod
	supervised map[*Pod]bool // the pods Supervise keeps, until released
	restarting int           // supervised pods dead, their successor not up yet
}

// NewSupervisor returns a supervisor that reports restarts it could not
// make through logf.
func NewSupervisor(logf func(source, format string, args ...any)) *Supervisor {
	return &Supervisor{logf: logf, Backoff: restartBackoff, MaxBackoff: maxRestartBackoff, supervised: map[*Pod]bool{}}
}

// Add records a pod started in the run.
func (s *Supervisor) Add(p *Pod) {
	s.mu.Lock()
	s.pods = append(s.pods, p)
	s.mu.Unlock()
}

// Pods returns every pod started, in order.
func (s *Supervisor) Pods() []*Pod {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Pod(nil), s.pods...)
}

// Pod returns the pod called name (the latest, if restarted).
func (s *Supervisor) Pod(name string) (*Pod, error) {
	ps := s.Pods()
	for i := len(ps) - 1; i >= 0; i-- {
		if ps[i].Name() == name {
			return ps[i], nil
		}
	}
	return nil, fmt.Errorf("no pod %q", name)
}

// Stopping reports whether StopAll began.
func (s *Supervisor) Stopping() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopping
}

// The default restart policy of a supervised pod: a deployment's restart
// delay, doubling as a crash loop's does, up to a cap.
const (
	restartBackoff    = 200 * time.Millisecond
	maxRestartBackoff = 2 * time.Second
)

// Supervise restarts p with restart whenever it exits before StopAll —
// killed at a kill-point, or exiting non-zero because a dependency was
// unreachable at start-up — after a short back-off, for as long as the run
// lasts, as a deployment's crash loop does. There is no restart budget: a
// broker that takes a minute to come back (a container restart on a
// loaded machine) must not leave the pipeline without pods once it is
// back, and a pod that can never start is judged by the run (nothing
// moves: stuck) however many times it was restarted. restart starts the
// successor and Adds it.
func (s *Supervisor) Supervise(p *Pod, restart func(context.Context, *Pod) (*Pod, error)) {
	s.mu.Lock()
	s.supervised[p] = true
	s.mu.Unlock()
	go func() {
		backoff := s.Backoff
		for {
			<-p.Done()
			if !s.due(p) {
				return
			}
			// A restart delay, not synchronisation: a pod that cannot
			// start while the broker or database restarts keeps being
			// restarted.
			time.Sleep(backoff)
			backoff = min(2*backoff, s.MaxBackoff)
			np, err := s.restart(p, restart)
			if err != nil {
				s.logf("harness", "restart %s: %v", p.Name(), err)
				return
			}
			if np == nil {
				return
			}
			p = np
		}
	}()
}

// due reports whether the dead supervised pod p is to be restarted (it was
// not released, the run is not stopping), and counts it as restarting.
func (s *Supervisor) due(p *Pod) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopping || !s.supervised[p] {
		delete(s.supervised, p)
		return false
	}
	delete(s.supervised, p)
	s.restarting++
	return true
}

// restart starts p's successor and supervises it in p's place; nil, nil
// when the run began stopping meanwhile.
func (s *Supervisor) restart(p *Pod, restart func(context.Context, *Pod) (*Pod, error)) (*Pod, error) {
	defer func() {
		s.mu.Lock()
		s.restarting--
		s.mu.Unlock()
	}()
	if s.Stopping() {
		return nil, nil
	}
	np, err := restart(context.Background(), p)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopping {
		_ = np.Kill()
		return nil, nil
	}
	s.supervised[np] = true
	return np, nil
}

// Release ends the supervision of p: its exit from now on is not a crash
// (a rollout is stopping it), and nothing restarts it.
func (s *Supervisor) Release(p *Pod) {
	s.mu.Lock()
	delete(s.supervised, p)
	s.mu.Unlock()
}

// Supervised returns the supervised pods still running, in start order.
func (s *Supervisor) Supervised() []*Pod {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*Pod
	for _, p := range s.pods {
		if s.supervised[p] && !isExited(p) {
			out = append(out, p)
		}
	}
	return out
}

// Restarting is how many supervised pods died and wait for their
// successor to be up.
func (s *Supervisor) Restarting() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.restarting
}

// isExited reports whether p has exited.
func isExited(p *Pod) bool {
	select {
	case <-p.Done():
		return true
	default:
		return false
	}
}

// StopAll stops every running pod (SIGTERM, then SIGKILL after grace) and
// ends supervision.
func (s *Supervisor) StopAll(grace time.Duration) {
	s.mu.Lock()
	s.stopping = true
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range s.Pods() {
		if !isExited(p) {
			wg.Go(func() { _ = p.Stop(grace) })
		}
	}
	wg.Wait()
}

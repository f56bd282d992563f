package rig

import (
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// Toxic is one injected network fault. Kind is "latency", "timeout" (a
// stall) or "down"; Target is the proxy name; Detail holds its parameters.
// End is zero while the fault is active; read it after Remove returns, or
// use Report.
type Toxic struct {
	Kind   string
	Target string
	Detail string
	Start  time.Time
	End    time.Time

	proxy    *Proxy
	remove   func() error
	firedNow func() bool

	mu    sync.Mutex
	ended bool
	fired bool
}

// Remove ends the fault: it takes it off the proxy's gate (or brings the
// proxy Up) and records End and whether the fault fired. Removing twice
// is a no-op.
func (f *Toxic) Remove() error {
	f.mu.Lock()
	ended := f.ended
	f.mu.Unlock()
	if ended {
		return nil
	}
	if err := f.remove(); err != nil {
		return fmt.Errorf("remove %s fault on %s: %w", f.Kind, f.Target, err)
	}
	f.finish()
	return nil
}

// Fired reports whether traffic reached the fault while it was active: for a
// toxic, whether any byte arrived on its stream; for "down", whether any
// connection was open and cut. While active it answers for the time so far.
func (f *Toxic) Fired() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ended {
		return f.fired
	}
	return f.firedNow()
}

// Active reports whether the fault has not been removed yet.
func (f *Toxic) Active() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return !f.ended
}

// Report returns what the fault did, for reports and histories.
func (f *Toxic) Report() FaultReport {
	f.mu.Lock()
	defer f.mu.Unlock()
	fired := f.fired
	if !f.ended {
		fired = f.firedNow()
	}
	return FaultReport{Kind: f.Kind, Target: f.Target, Detail: f.Detail, Start: f.Start, End: f.End, Fired: fired}
}

// finish records the end of the fault once.
func (f *Toxic) finish() {
	f.mu.Lock()
	if f.ended {
		f.mu.Unlock()
		return
	}
	f.ended = true
	f.End = time.Now()
	f.fired = f.firedNow()
	fired := f.fired
	f.mu.Unlock()
	f.proxy.forget(f)
	f.proxy.net.timeline().Add("faults", "%s on %s removed (fired=%t)", f.Kind, f.Target, fired)
	slog.Debug("network fault removed", "kind", f.Kind, "target", f.Target, "fired", fired)
}

func (f *Toxic) announce() {
	f.proxy.net.timeline().Add("faults", "%s on %s injected: %s", f.Kind, f.Target, f.Detail)
	slog.Debug("network fault injected", "kind", f.Kind, "target", f.Target, "detail", f.Detail)
}

// FaultReport is what a fault did, like an etcd robustness Failpoint report.
// End is zero if the fault was still active when the report was taken.
type FaultReport struct {
	Kind   string    `json:"kind"`
	Target string    `json:"target"`
	Detail string    `json:"detail,omitempty"`
	Start  time.Time `json:"start"`
	End    time.Time `json:"end"`
	Fired  bool      `json:"fired"`
}

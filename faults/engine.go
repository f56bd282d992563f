package faults

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/outboxchaos/outboxchaos/checker"
)

// Engine injects faults into one run's world and keeps the ledger: what
// was injected, when, when it was recovered, and whether it fired. It
// always recovers what it injected, even when a step between fails.
type Engine struct {
	w     World
	start time.Time
	now   func() time.Time // the ledger's clock (default: the wall clock)

	mu      sync.Mutex
	entries []*entry
}

type entry struct {
	f         Fault
	injected  time.Time
	recovered time.Time
	err       error
	// judged is set for a fault held during a step until a condition: the
	// fault fired only if the condition came while it was in place.
	judged    bool
	witnessed bool
}

// partlyBlind is a fault that cannot observe every way it bites; its
// step's condition is the evidence.
type partlyBlind interface{ PartlyBlind() }

// NewEngine returns an engine for world w; start is the run's start, the
// origin of the ledger's offsets.
func NewEngine(w World, start time.Time) *Engine { return &Engine{w: w, start: start, now: time.Now} }

// SetClock makes the ledger read now instead of the wall clock (a
// simulated day keeps it in virtual time; start must be on that clock).
func (e *Engine) SetClock(now func() time.Time) { e.now = now }

func (e *Engine) add(f Fault) *entry {
	en := &entry{f: f, injected: e.now()}
	e.mu.Lock()
	e.entries = append(e.entries, en)
	e.mu.Unlock()
	return en
}

// Arm records a pod fault and returns the environment that arms it in the
// pod about to start.
func (e *Engine) Arm(f PodFault) []string {
	e.add(f)
	e.w.Logf("faults", "armed %s", f)
	return f.PodEnv(e.w)
}

// Inject puts f in place and records it (also when injecting fails).
func (e *Engine) Inject(ctx context.Context, f Fault) error {
	en := e.add(f)
	if err := f.Inject(ctx, e.w); err != nil {
		e.mu.Lock()
		en.err = err
		e.mu.Unlock()
		return &InjectError{Fault: f, Err: err}
	}
	e.w.Logf("faults", "injected %s", f)
	return nil
}

// InjectError is a fault that could not be put in place.
type InjectError struct {
	Fault Fault
	Err   error
}

func (e *InjectError) Error() string { return fmt.Sprintf("inject %s: %v", e.Fault, e.Err) }

// Unwrap returns the cause.
func (e *InjectError) Unwrap() error { return e.Err }

// Recover takes f away and records when.
func (e *Engine) Recover(ctx context.Context, f Fault) error {
	e.mu.Lock()
	var en *entry
	for _, x := range e.entries {
		if x.f == f && x.recovered.IsZero() {
			en = x
		}
	}
	e.mu.Unlock()
	if en == nil {
		return nil
	}
	err := f.Recover(context.WithoutCancel(ctx), e.w)
	e.mu.Lock()
	en.recovered = e.now()
	e.mu.Unlock()
	if err != nil {
		return fmt.Errorf("recover %s: %w", f, err)
	}
	e.w.Logf("faults", "recovered %s", f)
	return nil
}

// During injects fs, runs body, and recovers fs whatever body returned.
// With byCond, body ends by waiting for a condition that comes only if the
// faults bit (a timed-out publish, pods waiting on a lock): a fault fired
// only if body succeeded and the fault itself was met — or, for a fault
// that cannot see everything it does (a link down refuses dials it never
// sees), if body succeeded. Without byCond, each fault says itself.
func (e *Engine) During(ctx context.Context, fs []Fault, byCond bool, body func(context.Context) error) error {
	var errs []error
	var in []Fault
	for _, f := range fs {
		if err := e.Inject(ctx, f); err != nil {
			errs = append(errs, err)
			break
		}
		in = append(in, f)
	}
	var berr error
	if len(errs) == 0 {
		berr = body(ctx)
	}
	for i := len(in) - 1; i >= 0; i-- {
		errs = append(errs, e.Recover(ctx, in[i]))
	}
	e.mu.Lock()
	for _, en := range e.entries {
		for _, f := range in {
			if en.f == f {
				en.judged, en.witnessed = byCond, berr == nil
			}
		}
	}
	e.mu.Unlock()
	return errors.Join(append([]error{berr}, errs...)...)
}

// Fired reports whether f has met the pipeline so far, with the evidence.
func (e *Engine) Fired(f Fault) (bool, string) { return f.Fired(e.w) }

// RecoverAll recovers every fault still in place (the end of a run, or a
// step that failed part-way).
func (e *Engine) RecoverAll(ctx context.Context) error {
	var errs []error
	for _, f := range e.Open() {
		errs = append(errs, e.Recover(ctx, f))
	}
	return errors.Join(errs...)
}

// Open lists the faults injected or armed and not yet recovered (a pod
// fault stays open until the run's end recovers it).
func (e *Engine) Open() []Fault {
	e.mu.Lock()
	defer e.mu.Unlock()
	var open []Fault
	for _, en := range e.entries {
		if en.recovered.IsZero() && en.err == nil {
			open = append(open, en.f)
		}
	}
	return open
}

// Faults returns every fault recorded, in the order they were.
func (e *Engine) Faults() []Fault {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]Fault, 0, len(e.entries))
	for _, en := range e.entries {
		out = append(out, en.f)
	}
	return out
}

// Records is the ledger, with each fault's fired verdict taken now (call it
// after the run's pods stopped).
func (e *Engine) Records() []checker.FaultRecord {
	e.mu.Lock()
	entries := append([]*entry(nil), e.entries...)
	e.mu.Unlock()
	out := make([]checker.FaultRecord, 0, len(entries))
	for _, en := range entries {
		fired, detail := en.f.Fired(e.w)
		switch {
		case en.err != nil:
			fired, detail = false, "not injected: "+en.err.Error()
		case en.judged && en.witnessed && !fired:
			if _, blind := en.f.(partlyBlind); blind {
				fired, detail = true, detail+"; its step's condition came while it was in place"
			}
		case en.judged && !en.witnessed:
			fired, detail = false, detail+"; its step's condition never came while it was in place"
		}
		end := e.now()
		if !en.recovered.IsZero() {
			end = en.recovered
		}
		out = append(out, Record(en.f, fired, detail, en.injected.Sub(e.start), end.Sub(e.start)))
	}
	return out
}

// Record is the ledger's line for fault f: what it is, where it says it
// reaches the pipeline, whether it fired with the evidence, and when it
// was injected and recovered (offsets from the run's start).
func Record(f Fault, fired bool, evidence string, injected, recovered time.Duration) checker.FaultRecord {
	reach := ReachOf(f)
	return checker.FaultRecord{
		Kind: f.Family(), Target: f.Target(), Fired: fired,
		Detail: f.String() + ": " + evidence,
		Start:  injected, At: recovered,
		Phases: reach.Phases, Windowed: reach.Windowed, Components: reach.Components,
	}
}

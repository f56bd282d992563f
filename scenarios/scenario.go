// Package scenarios reproduces every row of the SPEC §6 failure table, and
// the other loss windows the design names, against the real pipeline on real
// Postgres and RabbitMQ, and judges what actually happened.
//
// A scenario is a value (see Catalogue): a name, the SPEC row it proves, the
// fault it injects, and a Drive function that starts pods, injects the fault
// and waits on observable conditions. The runner then lets the pipeline
// settle, snapshots the final state (outbox and inbox rows, the fake
// vendor's handset ledger, the queues, the alerts received) and hands it to
// Check, a pure function, for a verdict. Every scenario asserts both columns
// of its row — lost? (and if so, visibly: ERROR/EXPIRED/parked with an
// alert) and twice? — and that its fault actually fired.
//
// To add a scenario: add one entry to Catalogue.
package scenarios

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/outboxchaos/outboxchaos/system/clock"
	"github.com/outboxchaos/outboxchaos/system/config"
	"github.com/outboxchaos/outboxchaos/system/notification"
)

// Scenario is one named failure case.
type Scenario struct {
	Name        string
	Row         string // SPEC §6 row ("4") or the design's other window ("extra")
	Description string
	Fault       string // what is injected
	Outcome     string // what the SPEC says must happen
	PerKind     int    // notifications of each kind (default 1)
	Kinds       []notification.Kind
	// Start places the virtual clock (default: 10:00 Seoul today).
	Start func(now time.Time) time.Time
	// Configure tweaks the compressed configuration.
	Configure func(*config.Config)
	// Drive runs the scenario: enqueue, start pods, inject the fault, wait.
	Drive func(ctx context.Context, e *Env) error
	// Expect checks the verdict and final state beyond the universal
	// contract (nothing twice, nothing silently lost, nothing stuck).
	Expect func(e *Env, s State, v Verdict) error
	// AllowUnfired accepts faults that never fired (random schedules).
	AllowUnfired bool
}

func (s *Scenario) perKind() int {
	if s.PerKind == 0 {
		return 1
	}
	return s.PerKind
}

func (s *Scenario) kindsArg() string {
	if len(s.Kinds) == 0 {
		return "all"
	}
	var out []string
	for _, k := range s.Kinds {
		out = append(out, string(k))
	}
	return strings.Join(out, ",")
}

// Lookup returns the scenario named name.
func Lookup(name string) (*Scenario, bool) {
	for _, s := range Catalogue() {
		if s.Name == name {
			return s, true
		}
	}
	return nil, false
}

// Names lists every scenario name in catalogue order.
func Names() []string {
	var out []string
	for _, s := range Catalogue() {
		out = append(out, s.Name)
	}
	return out
}

// Result is the outcome of one run.
type Result struct {
	Name     string
	Row      string
	Seed     int64
	Verdict  Verdict
	State    State
	Faults   []FaultRecord
	Err      error // a scenario-specific expectation or harness failure
	Duration time.Duration
	Timeline string
	Events   []HistoryEvent
}

// Pass reports whether the run matched its row.
func (r Result) Pass() bool { return r.Err == nil && r.Verdict.OK() }

// HistoryEvent is one recorded event of the run (pods' structured logs).
type HistoryEvent struct {
	At    time.Duration  `json:"at"`
	Pod   string         `json:"pod"`
	Name  string         `json:"event"`
	Attrs map[string]any `json:"attrs,omitempty"`
}

// Run runs scenario s once and returns its result. It always drops its
// schema and queues.
func Run(ctx context.Context, s *Scenario, o Options) Result {
	start := time.Now()
	res := Result{Name: s.Name, Row: s.Row, Seed: o.Seed}
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	e, err := newEnv(ctx, s, o)
	if err != nil {
		res.Err = fmt.Errorf("set up: %w", err)
		res.Duration = time.Since(start)
		if e != nil {
			_ = e.close()
		}
		return res
	}
	defer func() {
		if cerr := e.close(); cerr != nil && res.Err == nil {
			res.Err = fmt.Errorf("clean up: %w", cerr)
		}
	}()
	res.Err = e.drive(ctx)
	settled := true
	if res.Err == nil {
		if err := e.WaitSettled(ctx, 30*time.Second); err != nil {
			settled = false
			e.Logf("harness", "not settled: %v", err)
		}
	}
	e.StopPods()
	st, err := e.Snapshot(ctx)
	if err != nil && res.Err == nil {
		res.Err = fmt.Errorf("snapshot: %w", err)
	}
	st.Settled = settled
	res.State = st
	res.Faults = e.Faults()
	for _, ev := range e.Events("") {
		res.Events = append(res.Events, HistoryEvent{At: ev.At.Sub(e.TL.Start()), Pod: ev.Pod, Name: ev.Name, Attrs: ev.Attrs})
	}
	sort.SliceStable(res.Events, func(i, j int) bool { return res.Events[i].At < res.Events[j].At })
	res.Verdict = Judge(res.Events, res.Faults, st)
	if res.Err == nil {
		res.Err = e.faultsFired()
	}
	if res.Err == nil && s.Expect != nil {
		res.Err = s.Expect(e, st, res.Verdict)
	}
	e.Logf("harness", "final: %s", res.Verdict)
	res.Duration = time.Since(start)
	var b strings.Builder
	_, _ = e.TL.WriteTo(&b)
	res.Timeline = b.String()
	return res
}

func (e *Env) drive(ctx context.Context) error {
	if err := e.migrate(ctx); err != nil {
		return err
	}
	if e.Scenario.Drive == nil {
		return nil
	}
	return e.Scenario.Drive(ctx, e)
}

// migrate creates the schema once, directly (schema-race does its own).
func (e *Env) migrate(ctx context.Context) error {
	if e.Scenario.Name == "schema-race" {
		return nil
	}
	c := e.Cfg
	c.PGURL = e.SB.PGURL
	return appMigrate(ctx, c)
}

// faultsFired fails a run whose fault never happened.
func (e *Env) faultsFired() error {
	fs := e.Faults()
	if e.Scenario.AllowUnfired {
		return nil
	}
	if len(fs) == 0 {
		return fmt.Errorf("no fault was recorded: the scenario did not inject anything")
	}
	for _, f := range fs {
		if !f.Fired {
			return fmt.Errorf("fault %s on %s (%s) never fired", f.Kind, f.Target, f.Detail)
		}
	}
	return nil
}

// Enqueue runs the batch job as a pod to completion.
func (e *Env) Enqueue(ctx context.Context, opts ...PodOption) error {
	opts = append([]PodOption{WithArgs("--kinds", e.Scenario.kindsArg())}, opts...)
	_, err := e.Run(ctx, "job", opts...)
	return err
}

// Pipeline starts one relay, one worker and one cleanup pod.
func (e *Env) Pipeline(ctx context.Context) error {
	return e.StartAll(ctx, "relay", "worker", "cleanup")
}

// StartAll starts one pod of each role, in order.
func (e *Env) StartAll(ctx context.Context, roles ...string) error {
	for _, role := range roles {
		if _, err := e.Start(ctx, role); err != nil {
			return err
		}
	}
	return nil
}

// nextDay returns the virtual start time moved to hh:mm on the next day.
func nextDay(t time.Time, hh, mm int) time.Time {
	return clock.At(clock.At(t, 12, 0).Add(24*time.Hour), hh, mm)
}

// Notable reports whether a timeline line is worth printing in the short
// timeline: harness and operator lines, faults, kill-points, and the
// pipeline's state changes (not every delivery and ack).
func Notable(line string) bool {
	for _, k := range []string{"harness", "operator", "KILLPOINT", "FAILPOINT", "fault", "toxic", "claimed rows", "reclaim",
		"publish outcome", "publish failed", "marked published", "parked", "vendor call", "result", "alert", "SENDING timed out",
		"claim lost", "lost", "deferred", "finished", "history row exists", "reconnect", "job done", "exited", "started"} {
		if strings.Contains(line, k) {
			return true
		}
	}
	return false
}

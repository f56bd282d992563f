package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/outboxchaos/outboxchaos/checker"
	"github.com/outboxchaos/outboxchaos/faults"
	"github.com/outboxchaos/outboxchaos/history"
	"github.com/outboxchaos/outboxchaos/scenarios/scenario"
	"github.com/outboxchaos/outboxchaos/system/app"
	"github.com/outboxchaos/outboxchaos/system/preflight"
)

// Result is the outcome of one run.
type Result struct {
	Name    string
	Row     string
	Seed    int64
	Verdict checker.Verdict
	State   checker.State
	Faults  []checker.FaultRecord
	Err     error // a row-specific rule, an unfired fault, or a step that failed
	// NotJudged is why the contract was not judged, if it was not: the
	// harness or its infrastructure failed (set-up, the final snapshot,
	// clean-up) or the run was interrupted. It makes the outcome ERROR,
	// whatever the counts say.
	NotJudged error
	Duration  time.Duration
	Timeline  string
	Events    []history.Event
	// Record is what the checker judged; Artifacts is the folder it was
	// written to, if it was.
	Record    checker.Record
	Artifacts string
	// Cost is the run's wall time by phase and CPU time by process class.
	Cost Cost
}

// Outcome is a run's verdict at the run level: the contract held, was
// broken, or was not judged. Like Jepsen's :valid? true / false / :unknown.
type Outcome int

// The three outcomes. When several runs are folded into one answer, a
// broken contract outweighs an unjudged run, which outweighs a pass
// (Worst).
const (
	// OutcomePass: the run matched its row.
	OutcomePass Outcome = iota
	// OutcomeError: not judged; the harness or its infrastructure failed.
	OutcomeError
	// OutcomeFail: the contract or the row's rules were broken.
	OutcomeFail
)

// String is PASS, FAIL or ERROR, as the verdict lines print it.
func (o Outcome) String() string {
	switch o {
	case OutcomePass:
		return "PASS"
	case OutcomeFail:
		return "FAIL"
	default:
		return "ERROR"
	}
}

// Worst folds outcomes into one: FAIL if any failed, else ERROR if any was
// not judged, else PASS (as Jepsen merges validity).
func Worst(os ...Outcome) Outcome {
	w := OutcomePass
	for _, o := range os {
		if o > w {
			w = o
		}
	}
	return w
}

// Outcome is ERROR when the run was not judged, FAIL when it broke its row,
// else PASS.
func (r Result) Outcome() Outcome {
	switch {
	case r.NotJudged != nil:
		return OutcomeError
	case r.Err != nil || !r.Verdict.OK():
		return OutcomeFail
	default:
		return OutcomePass
	}
}

// Why says in one line why the run did not pass: why it was not judged,
// the rule or step that failed, or the invariants the verdict broke ("" on
// a pass).
func (r Result) Why() string {
	switch {
	case r.NotJudged != nil:
		return "not judged: " + r.NotJudged.Error()
	case r.Err != nil:
		return r.Err.Error()
	case !r.Verdict.OK():
		return "broke " + strings.Join(r.Verdict.Broken(), ", ")
	}
	return ""
}

// Pass reports whether the run matched its row (and was judged).
func (r Result) Pass() bool { return r.Outcome() == OutcomePass }

// Recheck judges a recorded run again, offline. A run that was not judged
// when it ran stays ERROR, with why as its error: its counts (a pipeline
// stopped half-way, a state never read) judge nothing. Otherwise the
// checker judges the record: FAIL with the rule that broke, or PASS.
func Recheck(rec checker.Record) (Outcome, checker.Verdict, error) {
	v, err := checker.Verify(rec)
	switch {
	case rec.NotJudged != "":
		return OutcomeError, v, errors.New(rec.NotJudged)
	case err != nil || !v.OK():
		return OutcomeFail, v, err
	default:
		return OutcomePass, v, nil
	}
}

// runTimeout bounds one whole run.
const runTimeout = 90 * time.Second

// Run runs scenario s once and returns its result. It always drops its
// schema and queues and recovers every fault it injected.
func Run(ctx context.Context, s *scenario.Scenario, o Options) (res Result) {
	start := time.Now()
	m := newMeter()
	res = Result{Name: s.Name, Row: s.Row, Seed: o.Seed}
	parent := ctx
	// An interrupt (the caller's context cancelled) leaves the run unjudged
	// whatever the snapshot shows; the clean-up below still runs.
	defer func() {
		if parent.Err() != nil {
			res.NotJudged = fmt.Errorf("interrupted: %w", context.Cause(parent))
		}
	}()
	if err := s.Validate(); err != nil {
		res.NotJudged = fmt.Errorf("set up: %w", err)
		return res
	}
	// A service that does not answer, or refuses the login, leaves the run
	// unjudged at once: no pod waits 30 s on it to end as "stuck".
	if err := preflight.Services(ctx, o.PGURL, o.AMQPURL); err != nil {
		res.NotJudged = fmt.Errorf("preflight: %w", err)
		res.Duration = time.Since(start)
		return res
	}
	timeout := runTimeout
	if s.Infra != "" {
		timeout = infraTimeout
	}
	// A longer settle bound lengthens the run by as much.
	timeout += s.SettleWithin() - scenario.DefaultSettle
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	e, err := newEnv(ctx, s, o)
	if err != nil {
		res.NotJudged = fmt.Errorf("set up: %w", err)
		res.Duration = time.Since(start)
		if e != nil {
			_ = e.close()
		}
		return res
	}
	if err := e.deadLetterCheckRun(ctx); err != nil {
		res.NotJudged = fmt.Errorf("set up: %w", err)
		res.Duration = time.Since(start)
		_ = e.close()
		return res
	}
	eng := faults.NewEngine(e.FaultWorld(), e.TL.Start())
	e.jumpEngine = eng
	res.Cost.Setup = m.lap()
	herr := e.drive(ctx, eng, &res.Cost, m)
	res.Cost.Steps = m.lap()
	settled := true
	if herr == nil {
		if err := e.WaitSettled(ctx, s.SettleWithin()); err != nil {
			settled = false
			e.Logf("harness", "not settled: %v", err)
			var ue *UnreadError
			if errors.As(err, &ue) {
				// What is still in flight cannot be told from what the
				// harness could not read: no verdict.
				res.NotJudged = fmt.Errorf("settle: %w", err)
			}
		}
	}
	res.Cost.Settle = m.lap()
	// Faults a step injected "until the end of the run" stay in place while
	// the pipeline settles, and while the pods stop (End).
	if rerr := e.End(ctx, eng); herr == nil && rerr != nil {
		herr = rerr
	}
	if err := e.awaitReleased(ctx); err != nil {
		e.Logf("harness", "snapshot taken anyway: %v", err)
	}
	st, err := e.Snapshot(ctx)
	switch {
	case err != nil && errors.Is(herr, errFailed):
		// A step already saw the pipeline fail (a pod exited the wrong
		// way): that is judged, and the state it left (a schema a broken
		// migration never created) may well be unreadable.
		herr = fmt.Errorf("%w (final snapshot: %v)", herr, err)
	case err != nil:
		// Without the final state there is nothing to judge.
		res.NotJudged = fmt.Errorf("snapshot: %w", err)
		if herr == nil {
			herr = res.NotJudged
		}
	}
	if xerr := e.ownFailure(); xerr != nil && res.NotJudged == nil {
		res.NotJudged = xerr
	}
	// A fault the harness could not put in place (its own write refused,
	// a pod already gone) leaves a run that is not the one drawn or
	// written: that is the harness failing, not the pipeline.
	var ie *faults.InjectError
	if herr != nil && res.NotJudged == nil && errors.As(herr, &ie) && !errors.Is(herr, errFailed) {
		res.NotJudged = fmt.Errorf("the harness could not inject a fault: %w", herr)
	}
	st.Settled = settled
	spec, _ := json.Marshal(s)
	rec := checker.Record{Scenario: s.Name, Row: s.Row, Seed: o.Seed, Bug: o.Bug, Impl: e.peerName(), ScenarioSpec: spec,
		Expect: s.Expect, AllowUnfired: s.AllowUnfired, History: e.history(), Faults: eng.Records(), State: st}
	if herr != nil {
		rec.HarnessError = herr.Error()
	}
	res.Verdict, res.Err = checker.Verify(rec)
	rec.Verdict = res.Verdict
	if res.Err != nil {
		rec.Failure = res.Err.Error()
	}
	res.State, res.Faults, res.Events, res.Record = st, rec.Faults, rec.History, rec
	e.Logf("harness", "final: %s", res.Verdict)
	if cerr := e.close(); cerr != nil && res.NotJudged == nil {
		res.NotJudged = fmt.Errorf("clean up: %w", cerr)
	}
	res.Cost.Teardown = m.lap()
	res.Cost.Waiting = e.waits.total()
	if e.jump != nil {
		res.Cost.Jumps, res.Cost.Jumped = e.jump.jumps, e.jump.skipped
	}
	res.Cost.CPU = m.cpu(e.sup.Pods())
	e.Logf("harness", "cost: %s", res.Cost)
	if parent.Err() != nil {
		// Interrupted: set here too, not only in the deferred call, so
		// that the record written below says so.
		res.NotJudged = fmt.Errorf("interrupted: %w", context.Cause(parent))
	}
	if res.NotJudged != nil {
		res.Record.NotJudged = res.NotJudged.Error()
	}
	res.Duration = time.Since(start)
	var b strings.Builder
	_, _ = e.TL.WriteTo(&b)
	res.Timeline = b.String()
	if o.Artifacts != "" && (o.RecordAll || !res.Pass()) {
		dir, werr := WriteArtifacts(o.Artifacts, res)
		if werr != nil {
			e.Logf("harness", "write artifacts: %v", werr)
		}
		res.Artifacts = dir
	}
	return res
}

// drive migrates the schema (unless the steps do, or it came migrated
// from the pool) and runs the steps; the migration counts as set-up in
// cost.
func (e *Env) drive(ctx context.Context, eng *faults.Engine, cost *Cost, m *meter) error {
	if !e.Scenario.SelfMigrate && !e.SB.Migrated() {
		c := e.Cfg
		c.PGURL = e.SB.PGURL
		if err := app.Migrate(ctx, c); err != nil {
			return err
		}
		if err := e.migratePeer(ctx); err != nil {
			return err
		}
	}
	cost.Setup += m.lap()
	r := &runner{e: e, eng: eng}
	return r.steps(ctx, e.Scenario.Steps)
}

// WriteArtifacts writes a run's record (run.json: the checker's input and
// the scenario to replay), the scenario alone (scenario.json) and its
// timeline into a new folder under dir, named by the scenario, the relay
// under test when it is not ours, the seed and the canary, and returns
// the folder.
func WriteArtifacts(dir string, r Result) (string, error) {
	name := r.Name
	if r.Record.Impl != "" {
		// Every relay runs a peer case under one seed: its name keeps
		// their records apart.
		name += "-" + r.Record.Impl
	}
	name += fmt.Sprintf("-seed%d", r.Seed)
	if r.Record.Bug != "" {
		name += "-" + r.Record.Bug
	}
	folder := filepath.Join(dir, "runs", name)
	if err := os.MkdirAll(folder, 0o755); err != nil {
		return "", fmt.Errorf("create %s: %w", folder, err)
	}
	rec, err := json.MarshalIndent(r.Record, "", "  ")
	if err != nil {
		return "", fmt.Errorf("encode run record: %w", err)
	}
	var spec json.RawMessage
	spec, _ = json.MarshalIndent(json.RawMessage(r.Record.ScenarioSpec), "", "  ")
	for file, body := range map[string][]byte{"run.json": rec, "scenario.json": spec, "timeline.txt": []byte(r.Timeline)} {
		if err := os.WriteFile(filepath.Join(folder, file), append(body, '\n'), 0o644); err != nil {
			return "", fmt.Errorf("write %s: %w", file, err)
		}
	}
	return folder, nil
}

// infraTimeout bounds an infrastructure scenario's run: a restart of a
// broker takes seconds on a loaded machine.
const infraTimeout = 4 * time.Minute

package scenarios

import (
	"context"
	"time"

	"github.com/outboxchaos/outboxchaos/auditor"
	"github.com/outboxchaos/outboxchaos/checker"
	"github.com/outboxchaos/outboxchaos/peers"
	"github.com/outboxchaos/outboxchaos/scenarios/catalogue"
	"github.com/outboxchaos/outboxchaos/scenarios/internal/run"
	"github.com/outboxchaos/outboxchaos/scenarios/scenario"
)

// What a user of the harness needs of a run, which lives behind the
// internal boundary (scenarios/internal/run): run a scenario once against
// the real pipeline and judge it (Run), its options and result, the
// outcome, a recorded run judged again, its timeline as the commands print
// it, and a run's world opened for a driver of its own (Open, Env).
type (
	// Options are a run's services, binary, seed, relay under test and
	// artifacts (DefaultOptions).
	Options = run.Options
	// Result is a run's verdict, timeline, record and cost.
	Result = run.Result
	// Outcome is PASS, FAIL or ERROR (not judged).
	Outcome = run.Outcome
	// Cost is what a run spent: wall time by part, CPU by process.
	Cost = run.Cost
	// Env is a run's world: its schema, pods, proxies, vendor and clock.
	Env = run.Env
)

// The outcomes of a run.
const (
	OutcomePass  = run.OutcomePass
	OutcomeFail  = run.OutcomeFail
	OutcomeError = run.OutcomeError
)

// Marker leads a printed timeline line that decided the verdict.
const Marker = run.Marker

// DefaultOptions are the shared local services and the built binary.
func DefaultOptions() Options { return run.DefaultOptions() }

// Run runs scenario s once and returns its result; it always drops its
// schema and queues and recovers every fault it injected. Against a relay
// we did not write (o.Impl), a case drawn across the relay's declared
// deadlines is drawn anew across that relay's own (catalogue.ForPeer).
func Run(ctx context.Context, s *scenario.Scenario, o Options) Result {
	if p, err := peers.Lookup(o.Impl); o.Impl != "" && err == nil {
		s = catalogue.ForPeer(s, p)
	}
	return run.Run(ctx, s, o)
}

// Open builds a run's world called name for a driver other than Run (the
// simulator): the schema migrated, the fake vendor, the alert sink and a
// proxy per link up, no pod started. The driver ends it as Run does
// (Env.End: the pods stop, then the faults are recovered), then closes it.
func Open(ctx context.Context, name string, o Options) (*Env, error) { return run.Open(ctx, name, o) }

// Recheck judges a recorded run again, offline (a run not judged when it
// ran stays ERROR).
func Recheck(rec checker.Record) (Outcome, checker.Verdict, error) { return run.Recheck(rec) }

// Worst folds outcomes into one: FAIL if any failed, else ERROR if any
// was not judged, else PASS.
func Worst(os ...Outcome) Outcome { return run.Worst(os...) }

// BusinessRows are the business rows that call for perKind notifications
// of kinds (none: every kind) from a job run at now.
func BusinessRows(now time.Time, perKind int, kinds []string) auditor.Business {
	return run.BusinessRows(now, perKind, kinds)
}

// Timeline is r's timeline as `scenario run` prints it: the lines that
// decided the verdict marked (Marker), and without verbose only the
// notable others, the clock's bookkeeping folded.
func Timeline(r Result, verbose bool) []string {
	return run.FormatLines(run.ReadableTimeline(r, verbose))
}

// Notable reports whether a timeline line is one a reader needs without
// verbose.
func Notable(line string) bool { return run.Notable(line) }

package sim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/outboxchaos/outboxchaos/checker"
	"github.com/outboxchaos/outboxchaos/faults"
	"github.com/outboxchaos/outboxchaos/history"
	"github.com/outboxchaos/outboxchaos/scenarios"
	"github.com/outboxchaos/outboxchaos/system/clock"
	"github.com/outboxchaos/outboxchaos/system/config"
)

// Options tune a simulation run.
type Options struct {
	PGURL, AMQPURL string
	Bin            string // the outboxchaos binary the pods run
	Seed           int64
	// Rate overrides the day's rate (0: the day's).
	Rate float64
	// Progress, if set, gets a progress bar (virtual time and counts).
	Progress io.Writer
	Log      *slog.Logger
	// Timeout bounds the whole run in wall time (default 40 minutes).
	Timeout time.Duration
}

// Result is what one simulated day measured.
type Result struct {
	Day      Day
	Seed     int64
	Rate     float64
	Settings []Setting
	Samples  []Sample
	Events   []Fired // planned events as they happened
	// Ledger is the fault engine's record of every planned fault.
	Ledger []FaultEntry
	// Latencies of every message that reached a phone, enqueue → handset.
	Latencies []Delivery
	Final     Sample // the state after the next morning's relay runs
	Verdict   checker.Verdict
	// ContractErr is the checker's objection, if any.
	ContractErr error
	Lag         Lag
	AdEnqueued  int // advertising outbox rows
	// ParkedOnRecord are the parked messages whose park the inbox also
	// records (a FAILED row): one loss, shown twice in the final counts.
	ParkedOnRecord int
	Calls          []time.Time // every vendor send request's arrival, virtual
	Wall           time.Duration
	Skipped        time.Duration // virtual time jumped over while idle
	Jumps          int
}

// Fired is a planned event and when it actually happened.
type Fired struct {
	Planned
	Actual time.Time
	Note   string
}

// FaultEntry is one planned fault as the fault engine recorded it, in
// virtual time: when it was injected (armed, for a kill-point) and
// recovered (a killed worker's successor up, a blip's links back, a
// kill-point disarmed after a run died there), whether the pipeline met
// it, and the evidence. AtEnd: it was still in place when the day ended
// and recovered then.
type FaultEntry struct {
	Fault, Target       string
	Injected, Recovered time.Time
	AtEnd               bool
	Fired               bool
	Evidence            string
}

// Run simulates day d on the real pipeline and returns what it measured.
// Every schema, queue, pod and proxy it made is gone when it returns.
func Run(ctx context.Context, d Day, o Options) (_ *Result, err error) {
	if err := d.Validate(); err != nil {
		return nil, fmt.Errorf("day %s: %w", d.Name, err)
	}
	if o.Rate > 0 {
		d.Rate = o.Rate
	}
	if o.Timeout <= 0 {
		o.Timeout = 40 * time.Minute
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if _, err := os.Stat(o.Bin); err != nil {
		return nil, fmt.Errorf("pod binary %s: %w (run make build)", o.Bin, err)
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	wallStart := time.Now()
	defer func() {
		// Whatever failed first (the seeding, a pod's start), a day
		// cancelled or out of time was stopped: say why.
		serr := stopped(ctx)
		switch {
		case err == nil, serr == nil, errors.Is(err, ErrInterrupted), errors.Is(err, ErrTimeout):
		default:
			err = fmt.Errorf("simulate %s: %w: %v", d.Name, serr, err)
		}
	}()

	dir, err := os.MkdirTemp("", "outboxchaos-sim-")
	if err != nil {
		return nil, fmt.Errorf("clock folder: %w", err)
	}
	defer os.RemoveAll(dir)
	start := d.at("07:55")
	ctl := clock.NewVirtual(start, d.Rate)
	clockPath := filepath.Join(dir, "clock")
	if err := clock.WriteSetting(clockPath, ctl); err != nil {
		return nil, err
	}
	plan := NewPlan(d, o.Seed)
	res := &Result{Day: d, Seed: o.Seed, Rate: d.Rate}
	probe := config.Default()
	configure(&probe, d, d.Rate)
	vendorTimeout := probe.VendorTimeout
	env, err := scenarios.Open(ctx, "sim-"+d.Name, scenarios.Options{
		PGURL: o.PGURL, AMQPURL: o.AMQPURL, Bin: o.Bin, Seed: o.Seed,
		Clock: clock.FilePrefix + clockPath,
		Tune: func(c *config.Config) {
			res.Settings = configure(c, d, d.Rate)
		},
		Vendor: vendorOptions(plan, d.Rate, vendorTimeout),
	})
	if err != nil {
		return nil, fmt.Errorf("open the simulated world: %w", err)
	}
	defer env.Close()

	r := &runner{d: d, o: o, plan: plan, env: env, ctl: ctl, clockPath: clockPath, res: res}
	r.eng = faults.NewEngine(env.FaultWorld(), start)
	r.eng.SetClock(ctl.Now)
	if err := r.seed(ctx); err != nil {
		return nil, err
	}
	if err := r.sampler.open(env); err != nil {
		return nil, err
	}
	defer r.sampler.close()
	bar := newProgress(o.Progress, d)
	herr := r.day(ctx, bar)
	bar.finish()
	r.dayEnd = ctl.Now()
	if err := env.End(ctx, r.eng); err != nil {
		env.Logf("sim", "%v", err)
	}
	if serr := stopped(ctx); herr == nil && serr != nil {
		herr = serr // stopped as the day ended: judge nothing
	}
	if herr != nil {
		return res, fmt.Errorf("simulate %s: %w", d.Name, herr)
	}
	if err := r.judge(ctx); err != nil {
		return res, err
	}
	res.Lag = measureLag(r.env.Vendor().CallLog(), plan, d.Rate, res.Events, r.tickLag)
	res.Wall = time.Since(wallStart)
	return res, nil
}

// judge takes the final snapshot, the latencies, and the checker's verdict.
func (r *runner) judge(ctx context.Context) error {
	st, err := r.env.Snapshot(ctx)
	if err != nil {
		return fmt.Errorf("final snapshot: %w", err)
	}
	st.Settled = true
	// The day's faults went in through the fault engine; a planned fault
	// the day never met (a kill-point no relay run reached) is allowed.
	faultRecs := r.eng.Records()
	r.res.Ledger = ledger(faultRecs, r.d.at("07:55"), r.dayEnd)
	rec := checker.Record{Scenario: "sim-" + r.d.Name, Row: "simulation", Seed: r.o.Seed, History: r.env.History(), State: st,
		Faults: faultRecs, AllowUnfired: true}
	r.res.Verdict, r.res.ContractErr = checker.Verify(rec)
	final, err := r.sampler.take(ctx, r.ctl.Now())
	if err != nil {
		return err
	}
	r.res.Final = final
	r.res.ParkedOnRecord = parkedOnRecord(st)
	for _, c := range r.env.Vendor().CallLog() {
		r.res.Calls = append(r.res.Calls, c.At)
	}
	if err := r.env.DB().QueryRow(ctx, `SELECT count(*) FROM notification_outbox WHERE advertising`).Scan(&r.res.AdEnqueued); err != nil {
		return fmt.Errorf("count advertising rows: %w", err)
	}
	r.res.Latencies, err = deliveries(ctx, r.env)
	return err
}

// ledger turns the engine's records (offsets from start on the virtual
// clock) into the day's ledger; end is when the day's driving ended.
func ledger(recs []checker.FaultRecord, start, end time.Time) []FaultEntry {
	out := make([]FaultEntry, 0, len(recs))
	for _, f := range recs {
		rec := start.Add(f.At)
		out = append(out, FaultEntry{Fault: f.Kind, Target: f.Target, Injected: start.Add(f.Start), Recovered: rec,
			AtEnd: !rec.Before(end), Fired: f.Fired, Evidence: f.Detail})
	}
	return out
}

// ErrTimeout: the day did not finish within Options.Timeout.
// ErrInterrupted: the caller cancelled the day (a signal); the error
// names the cause. Either way the day was not judged.
var (
	ErrTimeout     = errors.New("the day did not finish within the run's timeout")
	ErrInterrupted = errors.New("interrupted")
)

// stopped is nil while ctx runs, else why it stopped: ErrTimeout when the
// run's own deadline passed, ErrInterrupted (with the cause, a signal)
// when the caller cancelled it.
func stopped(ctx context.Context) error {
	if ctx.Err() == nil {
		return nil
	}
	cause := context.Cause(ctx)
	if errors.Is(cause, context.DeadlineExceeded) {
		return ErrTimeout
	}
	return fmt.Errorf("%w (%v)", ErrInterrupted, cause)
}

// parkedOnRecord counts the parked messages whose inbox row is FAILED.
func parkedOnRecord(st checker.State) int {
	failed := map[string]bool{}
	for _, r := range st.Inbox {
		if r.Status == history.InboxFailed {
			failed[r.MessageID] = true
		}
	}
	n := 0
	for _, p := range st.Parked {
		if failed[p.MessageID] {
			n++
			failed[p.MessageID] = false // a message parked twice counts once
		}
	}
	return n
}

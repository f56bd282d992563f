package sim

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/outboxchaos/outboxchaos/auditor"
	"github.com/outboxchaos/outboxchaos/checker"
	"github.com/outboxchaos/outboxchaos/faults"
	"github.com/outboxchaos/outboxchaos/history"
	"github.com/outboxchaos/outboxchaos/rig"
	"github.com/outboxchaos/outboxchaos/scenarios"
	"github.com/outboxchaos/outboxchaos/system/clock"
)

// Timing of the simulated day, virtual.
const (
	cronEvery     = 5 * time.Minute  // the relay's and cleanup's cron
	restartDelay  = 30 * time.Second // a killed worker's pod comes back after this
	sampleEvery   = time.Minute
	minJump       = 2 * time.Second // shorter idle stretches simply run
	podRunTimeout = 2 * time.Minute // real: a one-shot pod that takes longer is killed
	morningMax    = 4 * time.Hour   // the next morning's cron runs at most until noon
)

// loopStep is how often the driver looks at the clock (real time). It is
// a polling period, not synchronisation: every decision reads the state.
const loopStep = 5 * time.Millisecond

// runner is one simulated day in progress.
type runner struct {
	d         Day
	o         Options
	plan      *Plan
	env       *scenarios.Env
	ctl       *clock.Virtual
	clockPath string
	res       *Result
	sampler   sampler

	// eng injects the day's planned faults and keeps their ledger, in
	// virtual time.
	eng *faults.Engine

	mu     sync.Mutex
	timers []timer

	relayKill   faults.PodFault // the kill-point armed in the next relay runs
	relayEnv    []string        // its setting
	lastIdleSig string
	tickLag     time.Duration // the latest a cron run started
	dayEnd      time.Time     // virtual: when the driving ended
}

type timer struct {
	at   time.Time
	what string
	fn   func(context.Context)
}

// seed writes the business rows of every job and withdraws the consent of
// the members the plan says.
func (r *runner) seed(ctx context.Context) error {
	var b auditor.Business
	for _, j := range r.d.Jobs {
		jb := scenarios.BusinessRows(r.d.at(j.At), r.d.jobMembers(j), []string{j.Kind})
		b.Members = append(b.Members, jb.Members...)
		b.Registered = append(b.Registered, jb.Registered...)
		b.GradeHistories = append(b.GradeHistories, jb.GradeHistories...)
		b.AwardWinnings = append(b.AwardWinnings, jb.AwardWinnings...)
		b.MissionTargets = append(b.MissionTargets, jb.MissionTargets...)
		b.LockInTargets = append(b.LockInTargets, jb.LockInTargets...)
		b.Anniversaries = append(b.Anniversaries, jb.Anniversaries...)
	}
	for i := range b.Members {
		b.Members[i].Consent = r.plan.Consents(b.Members[i].ID)
	}
	// The harness writes and records them: the auditor judges the day
	// from these rows, not from the tables the jobs read.
	if err := r.env.SeedBusiness(ctx, b); err != nil {
		return fmt.Errorf("seed the day's business rows: %w", err)
	}
	return nil
}

// day drives the day: the worker deployment, the cron, the planned
// events, the samples; then the next morning's relay runs, which expire
// what the ad cut-off deferred.
func (r *runner) day(ctx context.Context, bar *progress) error {
	if err := r.deployWorkers(ctx); err != nil {
		return err
	}
	morning := r.d.at("08:00").AddDate(0, 0, 1)
	cron := cronTicks(r.d.at("08:00"), r.d.at("20:55"))
	lastTick := morning.Add(2 * cronEvery)
	cron = append(cron, morning, morning.Add(cronEvery), lastTick)
	events := append([]Planned(nil), r.plan.Events...)
	nextSample := r.ctl.Now()
	for {
		if err := stopped(ctx); err != nil {
			return fmt.Errorf("%w (virtual time %s)", err, r.ctl.Now().Format("15:04"))
		}
		now := r.ctl.Now()
		for len(events) > 0 && !events[0].At.After(now) {
			r.fire(ctx, events[0], now)
			events = events[1:]
		}
		for len(cron) > 0 && !cron[0].After(now) {
			r.tickLag = max(r.tickLag, now.Sub(cron[0]))
			r.tick(ctx, cron[0])
			cron = cron[1:]
		}
		r.runTimers(ctx, now)
		r.sampler.peek()
		if !now.Before(nextSample) {
			if err := r.record(ctx, now, bar); err != nil {
				return err
			}
			nextSample = now.Truncate(sampleEvery).Add(sampleEvery)
		}
		if len(cron) == 0 && r.quiet() {
			idle, err := r.idle(ctx)
			if err != nil {
				return err
			}
			if idle {
				// The next morning's cron goes on while rows wait for the
				// relay (one batch per run expires them), up to noon.
				left, err := r.outboxLeft(ctx)
				if err != nil {
					return err
				}
				if left == 0 || !lastTick.Before(morning.Add(morningMax)) {
					return nil
				}
				lastTick = lastTick.Add(cronEvery)
				cron = append(cron, lastTick)
			}
		}
		next := r.nextAt(events, cron)
		if next.Sub(now) > minJump && r.quiet() {
			idle, err := r.idle(ctx)
			if err != nil {
				return err
			}
			if idle {
				if err := r.record(ctx, now, bar); err != nil {
					return err
				}
				if err := r.jump(now, next); err != nil {
					return err
				}
				continue
			}
		}
		time.Sleep(loopStep)
	}
}

// record takes a sample into the result and the progress bar.
func (r *runner) record(ctx context.Context, now time.Time, bar *progress) error {
	s, err := r.sampler.take(ctx, now)
	if err != nil {
		return err
	}
	r.res.Samples = append(r.res.Samples, s)
	bar.update(s)
	return nil
}

// nextAt is the earliest thing the driver must be awake for; samples are
// not among them (a jump records one on each side). With nothing scheduled
// it is now: the clock never jumps past the end of the day.
func (r *runner) nextAt(events []Planned, cron []time.Time) time.Time {
	if len(cron) == 0 {
		return r.ctl.Now()
	}
	next := r.ctl.Now().Add(24 * time.Hour)
	if len(events) > 0 {
		next = minTime(next, events[0].At)
	}
	if len(cron) > 0 {
		next = minTime(next, cron[0])
	}
	r.mu.Lock()
	for _, t := range r.timers {
		next = minTime(next, t.at)
	}
	r.mu.Unlock()
	return next
}

// jump moves the shared clock from now to a moment just before next,
// sampling on both sides so the charts stay continuous.
func (r *runner) jump(now, next time.Time) error {
	target := next.Add(-time.Second)
	if !target.After(now) {
		return nil
	}
	r.ctl.Set(target)
	if err := clock.WriteSetting(r.clockPath, r.ctl); err != nil {
		return err
	}
	r.res.Skipped += target.Sub(now)
	r.res.Jumps++
	return nil
}

// quiet reports whether no one-shot pod runs, no worker waits for its
// successor, and no timer (a fault's end: a link back, a worker's
// replacement due) is pending.
func (r *runner) quiet() bool {
	if r.env.Restarting() > 0 || r.env.OneShots() > 0 {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.timers) == 0
}

// idle reports whether nothing is in flight, by the rule a settling run
// jumps its clock on (Env.InFlight): no message queued or held by a
// worker, no row being published or sent by a pod alive, no fault in
// place but the vendor's weather and armed kill-points, no request held
// at the vendor; and the signature of everything that moves (rows,
// events, vendor calls, alerts) the same as on the look before.
func (r *runner) idle(ctx context.Context) (bool, error) {
	m, rt, _ := r.sampler.depths()
	busy, sig, err := r.env.InFlight(ctx, r.eng, checker.QueueDepths{Main: m, Retry: rt})
	if err != nil {
		return false, err
	}
	same := sig == r.lastIdleSig
	r.lastIdleSig = sig
	return busy == "" && same, nil
}

// outboxLeft counts the rows the relay has yet to settle.
func (r *runner) outboxLeft(ctx context.Context) (int, error) {
	var n int
	if err := r.env.DB().QueryRow(ctx, `SELECT count(*) FROM notification_outbox WHERE status = ANY($1)`,
		[]string{history.OutboxPending, history.OutboxPublishing}).Scan(&n); err != nil {
		return 0, fmt.Errorf("count rows left: %w", err)
	}
	return n, nil
}

func cronTicks(from, until time.Time) []time.Time {
	var out []time.Time
	for t := from; !t.After(until); t = t.Add(cronEvery) {
		out = append(out, t)
	}
	return out
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// tick is one cron firing: a relay run and a cleanup sweep (and a
// reconciler run), as one-shot pods.
func (r *runner) tick(ctx context.Context, at time.Time) {
	r.mu.Lock()
	kp, env := r.relayKill, r.relayEnv
	r.mu.Unlock()
	r.oneShotPod(ctx, "relay", env, []string{"--once"}, func(p *rig.Pod) {
		if name, hit := p.Killpoint(); hit && kp != nil {
			r.mu.Lock()
			if r.relayKill == kp {
				r.relayKill, r.relayEnv = nil, nil
			}
			r.mu.Unlock()
			// Disarmed: the next relay runs start without it.
			if err := r.eng.Recover(ctx, kp); err != nil {
				r.env.Logf("sim", "%v", err)
			}
			r.note(Fired{Planned: Planned{At: at, What: "relay-kill"}, Actual: r.ctl.Now(), Note: p.Name() + " died at " + name})
		}
	})
	r.oneShotPod(ctx, "cleanup", nil, []string{"--once"}, nil)
	if r.d.Reconcile {
		r.oneShotPod(ctx, "reconciler", nil, []string{"--once"}, nil)
	}
}

// oneShotPod starts a pod that does one run and exits; done runs after it
// exited. A pod that does not exit in time is killed.
func (r *runner) oneShotPod(ctx context.Context, role string, env, args []string, done func(*rig.Pod)) {
	if err := r.env.StartOnce(ctx, role, env, args, podRunTimeout, done); err != nil {
		r.env.Logf("sim", "start %s: %v", role, err)
	}
}

func (r *runner) note(f Fired) {
	r.mu.Lock()
	r.res.Events = append(r.res.Events, f)
	r.mu.Unlock()
}

// fire carries out one planned event: a job run, faults armed in the next
// relay runs, or faults injected now and recovered as the event says.
func (r *runner) fire(ctx context.Context, ev Planned, now time.Time) {
	f := Fired{Planned: ev, Actual: now}
	switch {
	case ev.Job != nil:
		f.Note = fmt.Sprintf("%s for %d members", ev.Job.Kind, r.d.jobMembers(*ev.Job))
		r.oneShotPod(ctx, "job", nil, []string{"--seed=false", "--kinds", ev.Job.Kind}, nil)
	case ev.Armed:
		f.Note = r.arm(ctx, ev.Faults)
	default:
		f.Note = r.hold(ctx, ev, now)
	}
	r.note(f)
}

// hold injects ev's faults and recovers them after ev.For, at once if
// they act once, or when the day ends (For 0).
func (r *runner) hold(ctx context.Context, ev Planned, now time.Time) string {
	specs := slices.Clone(ev.Faults)
	if ev.OfActiveWorker {
		p := r.activeWorker()
		if p == nil {
			return "no worker running"
		}
		for i := range specs {
			specs[i].Pod = p.Name()
		}
	}
	fs, note := r.inject(ctx, specs...)
	switch {
	case ev.For > 0:
		r.after(now.Add(ev.For), ev.What+"-end", func(ctx context.Context) { r.recover(ctx, fs) })
		if allMomentary(fs) {
			// It acted as it went in; what it set off (a deployment's
			// replacement) is over For later.
			return fmt.Sprintf("%s, over %s later", note, ev.For)
		}
		note = fmt.Sprintf("%s for %s", note, ev.For)
	case allMomentary(fs):
		r.recover(ctx, fs) // it acted as it went in (a rollout is over when Inject returns)
	}
	return note
}

func allMomentary(fs []faults.Fault) bool {
	for _, f := range fs {
		if _, ok := f.(faults.Momentary); !ok {
			return false
		}
	}
	return len(fs) > 0
}

// arm arms a pod fault in the relay runs the cron starts from now, until
// one dies at its point; one still armed from before is replaced, so
// disarmed.
func (r *runner) arm(ctx context.Context, specs []faults.Spec) string {
	fs, note := r.build(specs)
	if len(fs) != 1 {
		return note
	}
	pf, ok := fs[0].(faults.PodFault)
	if !ok {
		return fs[0].String() + " is not armed in a pod"
	}
	env := r.eng.Arm(pf)
	r.mu.Lock()
	if r.relayKill != nil {
		_ = r.eng.Recover(ctx, r.relayKill)
	}
	r.relayKill, r.relayEnv = pf, env
	r.mu.Unlock()
	return "armed " + pf.String() + " in the next relay runs until one dies there"
}

// build makes the faults of specs; one that does not build is logged and
// left out (the plan writes only valid specs: a test checks it).
func (r *runner) build(specs []faults.Spec) ([]faults.Fault, string) {
	var fs []faults.Fault
	var notes []string
	for _, s := range specs {
		f, err := s.Build()
		if err != nil {
			r.env.Logf("sim", "%v", err)
			notes = append(notes, err.Error())
			continue
		}
		fs = append(fs, f)
	}
	return fs, strings.Join(notes, "; ")
}

// inject puts the faults of specs in place through the engine and says
// what it did; those that could not be put in place are in the ledger with
// the reason.
func (r *runner) inject(ctx context.Context, specs ...faults.Spec) ([]faults.Fault, string) {
	fs, note := r.build(specs)
	var in []faults.Fault
	var notes []string
	if note != "" {
		notes = append(notes, note)
	}
	for _, f := range fs {
		if err := r.eng.Inject(ctx, f); err != nil {
			r.env.Logf("sim", "%v", err)
			notes = append(notes, err.Error())
			continue
		}
		in = append(in, f)
		notes = append(notes, f.String())
	}
	return in, strings.Join(notes, ", ")
}

// recover takes fs away through the engine.
func (r *runner) recover(ctx context.Context, fs []faults.Fault) {
	for _, f := range fs {
		if err := r.eng.Recover(ctx, f); err != nil {
			r.env.Logf("sim", "%v", err)
		}
	}
}

// after runs fn when the virtual clock reaches at.
func (r *runner) after(at time.Time, what string, fn func(context.Context)) {
	r.mu.Lock()
	r.timers = append(r.timers, timer{at: at, what: what, fn: fn})
	r.mu.Unlock()
}

func (r *runner) runTimers(ctx context.Context, now time.Time) {
	r.mu.Lock()
	var due, rest []timer
	for _, t := range r.timers {
		if t.at.After(now) {
			rest = append(rest, t)
		} else {
			due = append(due, t)
		}
	}
	r.timers = rest
	r.mu.Unlock()
	for _, t := range due {
		t.fn(ctx)
	}
}

package run

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/outboxchaos/outboxchaos/checker"
	"github.com/outboxchaos/outboxchaos/faults"
	"github.com/outboxchaos/outboxchaos/history"
	"github.com/outboxchaos/outboxchaos/peers"
	"github.com/outboxchaos/outboxchaos/rig"
	"github.com/outboxchaos/outboxchaos/scenarios/scenario"
	"github.com/outboxchaos/outboxchaos/system/clock"
	"github.com/outboxchaos/outboxchaos/system/config"
	"github.com/outboxchaos/outboxchaos/system/reconcile"
)

// Time that jumps. While a run settles (and while a step waits
// on its condition, maybeJumpInStep), most of its wall time is spent
// waiting for the pipeline's own compressed timers: a dead
// relay's lease, a dead worker's SENDING timeout, a backoff step, the
// reconciler's next lookup. Every pod, the fake vendor and the harness
// read one file clock (clock.FilePrefix), so when nothing is in flight the
// harness moves it to the earliest such timer instead of waiting for it.
//
// "Nothing in flight" is judged from ground truth the harness can see, and
// must hold on two looks in a row with nothing changed between them:
//   - no fault injected and still acting, other than a vendor rule (which
//     acts on the requests that meet it, whenever they come), and no pod
//     fault that gives a pod a clock of its own (a pod fault such as a
//     kill-point acts only when its pod reaches the point, which a jump
//     does not move);
//   - nothing ready in the main or retry queue, no inbox row RESENDING;
//   - no job or migration running, no pod frozen at a pause-point;
//   - every PUBLISHING row's claimant (the relay life that logged its
//     claim) has exited, every SENDING row's claimant has exited or acked
//     the message, and no scheduler lock is held by a live pod.
//
// The timers it jumps to are the real ones of system/: a PENDING row's
// next_attempt_at, an abandoned lease's claimed_until, a SENDING row's
// created_at plus the SENDING timeout, an ERROR row's next lookup, a dead
// pod's scheduler lock, the landing of a land-late request the vendor
// holds (on the vendor's clock). The real timers that cannot follow a
// virtual clock (AMQP heartbeats, the vendor and alert HTTP timeouts,
// RabbitMQ's retry TTL, Postgres's) are never what the run waits on when
// it jumps: each belongs to something in flight, which the rules above
// refuse.
//
// Jumps are off (the run waits in real time, as before) with --no-jumps,
// for a run whose clock another driver owns (the simulator), a relay we
// did not write, the run's own JetStream or containers. A jump never
// crosses a time of day a rule reads (crossesRule): a run started at
// 20:39:58 waits for the ad cut-off in real time.

const (
	// jumpMin: a timer due sooner than this is simply waited for.
	jumpMin = 150 * time.Millisecond
	// jumpPast: the clock lands this far past the timer, so a statement
	// comparing with < or <= sees it due.
	jumpPast = 20 * time.Millisecond
	// jumpMax: a timer further away than this is no compressed timer of
	// the pipeline's; the run waits (and its settle bound decides).
	jumpMax = 10 * time.Minute
)

// jumper owns the run's file clock.
type jumper struct {
	path string
	ctl  *clock.Virtual

	lastSig string
	waiting string // what kept the last look from jumping
	// lastLook is when a step's wait last looked (maybeJumpInStep).
	lastLook time.Time
	jumps    int
	skipped  time.Duration
}

// newJumper writes the run's clock, starting at day, to a file of its own
// and returns it; the pods read it through clock.FilePrefix+path.
func newJumper(day time.Time) (*jumper, error) {
	dir, err := os.MkdirTemp("", "outboxchaos-clock-")
	if err != nil {
		return nil, fmt.Errorf("clock file: %w", err)
	}
	j := &jumper{path: filepath.Join(dir, "clock"), ctl: clock.NewVirtual(day, 1)}
	if err := clock.WriteSetting(j.path, j.ctl); err != nil {
		return nil, err
	}
	return j, nil
}

// setting is the clock setting the pods are given.
func (j *jumper) setting() string { return clock.FilePrefix + j.path }

// close removes the clock file.
func (j *jumper) close() error {
	if j == nil {
		return nil
	}
	return os.RemoveAll(filepath.Dir(j.path))
}

// jumpsOff says why run e waits in real time ("" = it may jump).
func jumpsOff(e *Env, o Options) string {
	s := e.Scenario
	switch {
	case o.NoJumps:
		return "--no-jumps"
	case o.Clock != "":
		return "the clock is the caller's"
	case o.Infra != nil || s.Infra != "":
		return "the run has containers of its own"
	case e.Peer.Name != peers.Ours:
		return "a relay we did not write"
	case e.Peer.Features.JetStream != nil:
		return "the run has a JetStream of its own"
	}
	return ""
}

// maybeJump moves the clock to the earliest due timer when nothing is in
// flight in s (not quiescent) and on the look before. What keeps a run
// from jumping is logged when it changes, so a slow settle says why.
func (e *Env) maybeJump(ctx context.Context, s checker.State) error {
	j := e.jump
	if j == nil {
		return nil
	}
	l, err := e.look(ctx, e.jumpEngine, s)
	if err != nil {
		j.lastSig = ""
		return err
	}
	now := j.ctl.Now()
	wait := l.busy
	crossed := ""
	if !l.due.IsZero() {
		crossed = crossesRule(e.Cfg, now, l.due.Add(jumpPast))
	}
	switch {
	case wait != "":
	case l.due.IsZero():
		wait = "no timer due"
	case l.due.Sub(now) < jumpMin:
		wait = l.what + " is due within " + jumpMin.String()
	case l.due.Sub(now) > jumpMax:
		wait = l.what + " is further than " + jumpMax.String()
	case crossed != "":
		wait = "a jump to " + l.what + " would cross " + crossed
	case l.sig != j.lastSig:
		wait = "a second look"
	}
	j.lastSig = l.sig
	if wait != "" {
		if wait != j.waiting && wait != "a second look" {
			e.Logf("harness", "clock not jumped: %s", wait)
		}
		j.waiting = wait
		return nil
	}
	target := l.due.Add(jumpPast)
	j.ctl.Set(target)
	if err := clock.WriteSetting(j.path, j.ctl); err != nil {
		return err
	}
	j.jumps++
	j.skipped += target.Sub(now)
	j.lastSig, j.waiting = "", ""
	e.Logf("harness", "clock jumped %s to %s: nothing in flight, next due %s",
		target.Sub(now).Round(time.Millisecond), target.In(clock.Seoul).Format("15:04:05.000"), l.what)
	return nil
}

// stepLookEvery spaces the looks a step's wait takes for a jump: each
// reads the queues over a connection of its own.
const stepLookEvery = 100 * time.Millisecond

// maybeJumpInStep is maybeJump for a step waiting on condition c, which
// may take a jump only if it asks for nothing to stay absent (no_event: a
// jump could bring what it waits to see absent) and its last look is
// stepLookEvery old. Of a snapshot it needs only the queues' depths and
// the vendor's held requests (no parked copy is read, as a step may be
// counting them); the look reads the rows itself.
func (e *Env) maybeJumpInStep(ctx context.Context, c *scenario.Cond) error {
	j := e.jump
	if j == nil || waitsForAbsence(c) || time.Since(j.lastLook) < stepLookEvery {
		return nil
	}
	j.lastLook = time.Now()
	d, err := e.depths()
	if err != nil {
		return nil // queues not declared yet: no worker ran, nothing to jump to
	}
	return e.maybeJump(ctx, checker.State{Queues: d, VendorHeld: e.vendor.Held(), WorkerHeld: e.WorkerHeld()})
}

// waitsForAbsence reports whether c, or a condition inside it, is a
// no_event.
func waitsForAbsence(c *scenario.Cond) bool {
	if c.NoEvent != nil {
		return true
	}
	for i := range c.Any {
		if waitsForAbsence(&c.Any[i]) {
			return true
		}
	}
	for i := range c.All {
		if waitsForAbsence(&c.All[i]) {
			return true
		}
	}
	return false
}

// ruleMargin: a jump stops this far short of a time of day a rule reads.
const ruleMargin = time.Second

// crossesRule names the time of day a rule of the pipeline reads that a
// jump from now to target would pass or come within ruleMargin of ("" if
// none): the relay window, the ad cut-off and resume time, the worker's
// advertising hours, and midnight in Seoul and in UTC (dates).
func crossesRule(c config.Config, now, target time.Time) string {
	rules := []struct {
		name string
		at   config.TimeOfDay
	}{{"the relay window's start", c.RelayFrom}, {"the relay window's end", c.RelayUntil},
		{"the ad cut-off", c.AdPublishCutoff}, {"the ad resume time", c.AdResumeAt},
		{"the worker's ad hours' start", c.AdSendFrom}, {"the worker's ad hours' end", c.AdSendUntil}}
	end := target.Add(ruleMargin)
	for _, day := range []time.Time{clock.Date(now), clock.Date(now).AddDate(0, 0, 1)} {
		for _, r := range rules {
			if b := r.at.On(day); b.After(now) && !b.After(end) {
				return r.name + " (" + r.at.String() + ")"
			}
		}
		if day.After(now) && !day.After(end) {
			return "midnight in Seoul"
		}
	}
	utc := now.UTC().Truncate(24 * time.Hour).Add(24 * time.Hour)
	if !utc.After(end) {
		return "midnight UTC"
	}
	return ""
}

// look is what one look at a settling run found: why it is busy ("" if
// nothing is in flight), its activity signature, and its earliest due
// timer with what that is.
type look struct {
	busy string
	sig  string
	due  time.Time
	what string
}

func (l *look) earliest(t time.Time, what string) {
	if l.due.IsZero() || t.Before(l.due) {
		l.due, l.what = t, what
	}
}

// look reads the run: the queues and held requests (in s), the faults
// open in eng, the pods, the outbox and inbox rows and the scheduler locks.
func (e *Env) look(ctx context.Context, eng *faults.Engine, s checker.State) (look, error) {
	switch {
	case eng == nil:
		return look{busy: "no fault engine"}, nil
	case s.Queues.Main > 0 || s.Queues.Retry > 0:
		return look{busy: "messages queued"}, nil
	case s.WorkerHeld > 0:
		return look{busy: "a worker holds a delivery"}, nil
	}
	for _, f := range eng.Open() {
		if vendorOnly(f) {
			// A vendor rule or weather acts on the requests that meet
			// it, whenever they come; a request it holds or hangs is in
			// flight, which the rows and locks below show.
			continue
		}
		if _, once := f.(faults.Momentary); once {
			// It acted as it went in and holds nothing: a pod it
			// signalled or continued, a row or message it changed, shows
			// below.
			continue
		}
		_, pod := f.(faults.PodFault)
		if _, own := f.(*faults.ClockStep); !pod || own {
			return look{busy: f.String() + " is in place"}, nil
		}
	}
	live := map[string]*rig.Pod{} // by instance name: the pods running now
	events := 0
	for _, p := range e.Pods() {
		events += p.EventCount()
		if exited(p) {
			continue
		}
		e.mu.Lock()
		role := e.meta[p.Name()].role
		e.mu.Unlock()
		if role == "job" || role == "migrate" {
			return look{busy: p.Name() + " runs"}, nil
		}
		if p.Frozen() {
			return look{busy: p.Name() + " is frozen"}, nil
		}
		live[p.Name()] = p
	}
	// Read at the first row that asks: a look that finds no row in
	// flight reads no pod's events.
	claims := sync.OnceValue(e.claimants)
	var b strings.Builder
	fmt.Fprintf(&b, "events=%d", events)
	l := look{}
	now := e.Now()
	if err := e.lookOutbox(ctx, now, claims, &l, &b); err != nil || l.busy != "" {
		return l, err
	}
	if err := e.lookInbox(ctx, claims, &l, &b); err != nil || l.busy != "" {
		return l, err
	}
	if err := e.lookLocks(ctx, now, live, &l, &b); err != nil || l.busy != "" {
		return l, err
	}
	// A land-late request the vendor holds lands on the vendor's clock
	// (fakevendor: LandLateMax after it arrived) unless a lookup comes
	// first: the jump goes to whichever is earlier, as real time would.
	if t, ok := e.vendor.NextLanding(); ok {
		fmt.Fprintf(&b, " held=%d", s.VendorHeld)
		l.earliest(t, "a held land-late request's landing")
	}
	l.sig = b.String()
	return l, nil
}

// lookOutbox: a PENDING row waits for its next attempt, a PUBLISHING row
// for its lease, if the relay life that claimed it has exited.
func (e *Env) lookOutbox(ctx context.Context, now time.Time, claims func() claimants, l *look, b *strings.Builder) error {
	rows, err := e.Pool.Query(ctx, `SELECT id, status, next_attempt_at, coalesce(claimed_until, 'epoch')
		FROM notification_outbox WHERE status IN ('PENDING', 'PUBLISHING') ORDER BY id`)
	if err != nil {
		return fmt.Errorf("read outbox rows for a clock jump: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var status string
		var next, until time.Time
		if err := rows.Scan(&id, &status, &next, &until); err != nil {
			return fmt.Errorf("read outbox rows for a clock jump: %w", err)
		}
		fmt.Fprintf(b, " o%d=%s", id, status)
		switch {
		case status == "PENDING" && e.worksAt(next, now).Sub(now) < deferredHorizon:
			l.earliest(e.worksAt(next, now), fmt.Sprintf("outbox row %d's next attempt (in the relay's window)", id))
		case status == "PUBLISHING":
			if p := claims().rows[id]; p == nil || !exited(p) {
				l.busy = fmt.Sprintf("outbox row %d is being published", id)
				return nil
			}
			l.earliest(until, fmt.Sprintf("outbox row %d's abandoned lease", id))
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read outbox rows for a clock jump: %w", err)
	}
	return nil
}

// lookInbox: a SENDING row waits for its timeout once its worker exited or
// acked the message, an unsettled ERROR row for its next lookup; a
// RESENDING row is a re-send in flight.
func (e *Env) lookInbox(ctx context.Context, claims func() claimants, l *look, b *strings.Builder) error {
	final := reconcile.FinalAfter(e.Cfg)
	rows, err := e.Pool.Query(ctx, `SELECT message_id, status, created_at, reconcile_next_at, reconcile_tries
		FROM notification_histories
		WHERE message_id IS NOT NULL AND (status IN ('SENDING', 'RESENDING') OR (status = 'ERROR' AND settled IS NULL))
		ORDER BY id`)
	if err != nil {
		return fmt.Errorf("read inbox rows for a clock jump: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var mid, status string
		var created time.Time
		var next *time.Time
		var tries int
		if err := rows.Scan(&mid, &status, &created, &next, &tries); err != nil {
			return fmt.Errorf("read inbox rows for a clock jump: %w", err)
		}
		fmt.Fprintf(b, " %s=%s", mid, status)
		switch status {
		case history.InboxResending:
			l.busy = mid + " is being re-sent"
			return nil
		case history.InboxSending:
			if c := claims().sends[mid]; c.pod == nil || !exited(c.pod) && !c.acked {
				l.busy = mid + " is being sent"
				return nil
			}
			l.earliest(created.Add(e.Cfg.SendingTimeout), mid+"'s SENDING timeout")
		case history.InboxError:
			if !e.reconcilable(status, "", tries) { // settled IS NULL above
				continue
			}
			t := created.Add(final)
			if next != nil {
				t = *next
			}
			l.earliest(t, mid+"'s next lookup")
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read inbox rows for a clock jump: %w", err)
	}
	return nil
}

// lookLocks: a scheduler lock a live pod holds is a sweep in progress; a
// dead pod's waits for its expiry.
func (e *Env) lookLocks(ctx context.Context, now time.Time, live map[string]*rig.Pod, l *look, b *strings.Builder) error {
	locks, err := e.Pool.Query(ctx, `SELECT name, locked_by, locked_until FROM scheduler_locks WHERE locked_until > $1`, now)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42P01" {
		return nil // no cleanup or reconciler ran yet: no lock table
	}
	if err != nil {
		return fmt.Errorf("read scheduler locks for a clock jump: %w", err)
	}
	defer locks.Close()
	for locks.Next() {
		var name, by string
		var until time.Time
		if err := locks.Scan(&name, &by, &until); err != nil {
			return fmt.Errorf("read scheduler locks for a clock jump: %w", err)
		}
		if live[by] != nil {
			l.busy = by + " holds the " + name + " lock"
			return nil
		}
		fmt.Fprintf(b, " lock-%s=%s", name, by)
		l.earliest(until, "the "+name+" lock "+by+" left")
	}
	if err := locks.Err(); err != nil {
		return fmt.Errorf("read scheduler locks for a clock jump: %w", err)
	}
	return nil
}

// vendorOnly reports whether f acts on the vendor alone, by its reach.
func vendorOnly(f faults.Fault) bool {
	return slices.Equal(faults.ReachOf(f).Components, []string{faults.ComponentVendor})
}

// claimants are the pod lives that last claimed each outbox row (a relay's
// claim) and each message (a worker's), and whether that worker acked it.
type claimants struct {
	rows  map[int64]*rig.Pod
	sends map[string]send
}

type send struct {
	pod   *rig.Pod
	acked bool
}

func (e *Env) claimants() claimants {
	type logged struct {
		ev  history.Event
		pod *rig.Pod
	}
	var all []logged
	for _, p := range e.Pods() {
		for _, ev := range p.Events() {
			if ev.Name == history.Claim || ev.Name == history.Ack {
				all = append(all, logged{ev, p})
			}
		}
	}
	sort.SliceStable(all, func(i, k int) bool { return all[i].ev.Time.Before(all[k].ev.Time) })
	c := claimants{rows: map[int64]*rig.Pod{}, sends: map[string]send{}}
	for _, l := range all {
		ev, p := l.ev, l.pod
		mid := ev.Str(history.KeyMessageID)
		switch {
		case ev.Name == history.Claim && mid != "":
			c.sends[mid] = send{pod: p}
		case ev.Name == history.Claim:
			ids, _ := ev.Attrs[history.KeyIDs].([]any)
			for _, v := range ids {
				if f, ok := v.(float64); ok {
					c.rows[int64(f)] = p
				}
			}
		case ev.Str(history.KeyStep) != history.StepClaim:
			// An ack by the claimant itself, after its claim: it is done
			// with the message (an ack because another copy holds the
			// claim says nothing of that copy's send).
			if s, ok := c.sends[mid]; ok && s.pod == p {
				c.sends[mid] = send{pod: p, acked: true}
			}
		}
	}
	return c
}

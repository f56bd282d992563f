package scenarios

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/outboxchaos/outboxchaos/checker"
	"github.com/outboxchaos/outboxchaos/faults"
	"github.com/outboxchaos/outboxchaos/world"
)

// Cond is an observable condition a step waits for, as data: exactly one
// field is set.
type Cond struct {
	Rows      *Rows      `json:"rows,omitempty"`       // exactly n rows match
	Ledger    int        `json:"ledger,omitempty"`     // at least n messages reached a handset
	Event     *EventCond `json:"event,omitempty"`      // at least n matching events were logged
	NoEvent   *EventCond `json:"no_event,omitempty"`   // no matching event was logged (yet)
	Killed    string     `json:"killed,omitempty"`     // the pod died at its kill-point
	Paused    string     `json:"paused,omitempty"`     // the pod froze at its pause-point
	Exited    string     `json:"exited,omitempty"`     // the pod (or every pod of "role-") exited
	Succeeded string     `json:"succeeded,omitempty"`  // … and exited 0
	InFlight  int64      `json:"in_flight,omitempty"`  // a send request for outbox row n reached the vendor
	Copies    int        `json:"copies,omitempty"`     // at least n messages delivered twice to a worker
	PeekSkips int        `json:"peek_skips,omitempty"` // at least n redeliveries skipped at the peek
	Waiters   int        `json:"waiters,omitempty"`    // at least n backends wait on the step's hold
	Migrators int        `json:"migrators,omitempty"`  // n migrate pods wait on the step's held migration
	Queue     *QueueCond `json:"queue,omitempty"`      // a queue holds exactly n ready messages
	Blocked   string     `json:"blocked,omitempty"`    // the pod's connection waits on the step's hold
	Fired     bool       `json:"fired,omitempty"`      // every fault of the during step met the pipeline
	// Traffic: a link carried n protocol messages of a kind since the
	// step began.
	Traffic *TrafficCond `json:"traffic,omitempty"`
	// DedupExpired: the run's JetStream forgot every message id published
	// before the wait began (its duplicate window passed, as a probe id
	// shows).
	DedupExpired bool   `json:"dedup_expired,omitempty"`
	Any          []Cond `json:"any,omitempty"` // one of these holds
	All          []Cond `json:"all,omitempty"` // all of these hold
}

// condition is one kind of condition, registered in conditions under the
// JSON key of its field in Cond: what it means (docs/harness.md lists the
// same), whether a Cond sets it, and how it is described and probed.
// Validate is optional.
type condition struct {
	doc      string
	set      func(c *Cond) bool
	describe func(c *Cond) string
	holds    func(ctx context.Context, p *probe, c *Cond) (bool, error)
	validate func(c *Cond) error
}

// conditions is the registry of conditions. A new condition is its field
// in Cond, a file with its functions, and one line here. The combinators
// any and all are not in it: they hold conditions, not facts.
var conditions = map[string]condition{
	"rows":       {"exactly n rows of a table match", func(c *Cond) bool { return c.Rows != nil }, describeRows, holdsRows, validateRows},
	"ledger":     {"at least n messages reached a handset", func(c *Cond) bool { return c.Ledger > 0 }, describeLedger, holdsLedger, nil},
	"event":      {"at least n matching events were logged", func(c *Cond) bool { return c.Event != nil }, describeEvent, holdsEvent, validateEvent},
	"no_event":   {"no matching event was logged (yet)", func(c *Cond) bool { return c.NoEvent != nil }, describeNoEvent, holdsNoEvent, validateNoEvent},
	"killed":     {"the pod died at its kill-point", func(c *Cond) bool { return c.Killed != "" }, describeKilled, holdsKilled, nil},
	"paused":     {"the pod froze at its pause-point", func(c *Cond) bool { return c.Paused != "" }, describePaused, holdsPaused, nil},
	"exited":     {"the pod (or every pod of role-) exited", func(c *Cond) bool { return c.Exited != "" }, describeExited, holdsExited, nil},
	"succeeded":  {"the pod (or every pod of role-) exited 0", func(c *Cond) bool { return c.Succeeded != "" }, describeSucceeded, holdsSucceeded, nil},
	"in_flight":  {"a send request for outbox row n reached the vendor", func(c *Cond) bool { return c.InFlight > 0 }, describeInFlight, holdsInFlight, nil},
	"copies":     {"at least n messages delivered twice to a worker", func(c *Cond) bool { return c.Copies > 0 }, describeCopies, holdsCopies, nil},
	"peek_skips": {"at least n redeliveries skipped at the peek", func(c *Cond) bool { return c.PeekSkips > 0 }, describePeekSkips, holdsPeekSkips, nil},
	"waiters":    {"at least n backends wait on the step's hold", func(c *Cond) bool { return c.Waiters > 0 }, describeWaiters, holdsWaiters, nil},
	"migrators":  {"n migrate pods wait on the step's held migration", func(c *Cond) bool { return c.Migrators > 0 }, describeMigrators, holdsMigrators, nil},
	"queue":      {"a queue holds exactly n ready messages", func(c *Cond) bool { return c.Queue != nil }, describeQueue, holdsQueue, validateQueue},
	"blocked":    {"the pod's connection waits on the step's hold", func(c *Cond) bool { return c.Blocked != "" }, describeBlocked, holdsBlocked, nil},
	"fired":      {"every fault of the during step met the pipeline", func(c *Cond) bool { return c.Fired }, describeFired, holdsFired, nil},
	"traffic": {"a link carried n publish, confirm, return or statement messages since the step began",
		func(c *Cond) bool { return c.Traffic != nil }, describeTraffic, holdsTraffic, validateTraffic},
	"dedup_expired": {"the run's JetStream forgot every message id published before the wait (its duplicate window passed)",
		func(c *Cond) bool { return c.DedupExpired }, describeDedupExpired, holdsDedupExpired, nil},
}

// combinators are the conditions made of conditions.
var combinators = []string{"any", "all"}

// ConditionNames lists every condition's JSON key, combinators included,
// sorted.
func ConditionNames() []string {
	out := slices.Clone(combinators)
	for name := range conditions {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// Rows counts rows of a table: outbox, inbox or coupons, filtered.
type Rows struct {
	Table       string `json:"table"`
	Status      string `json:"status,omitempty"`
	NotStatus   string `json:"not_status,omitempty"`
	ClaimedBy   string `json:"claimed_by,omitempty"`
	Reason      string `json:"reason,omitempty"`
	Advertising bool   `json:"advertising,omitempty"`
	Msg         int64  `json:"msg,omitempty"` // inbox: the outbox id's message
	N           int    `json:"n"`
}

// QueueCond counts the ready messages of one of the run's queues: main,
// retry or parking.
type QueueCond struct {
	Queue string `json:"queue"`
	N     int    `json:"n"`
}

// queueNames are the queues a QueueCond may name.
var queueNames = []string{"main", "retry", "parking"}

// EventCond matches events by name, pod ("relay-1", or "relay-" for any
// relay) and attributes; Fresh counts only events logged after the step
// began.
type EventCond struct {
	Name  string            `json:"name"`
	Pod   string            `json:"pod,omitempty"`
	Attrs map[string]string `json:"attrs,omitempty"`
	N     int               `json:"n,omitempty"` // default 1
	Fresh bool              `json:"fresh,omitempty"`
}

var tables = map[string]string{"outbox": "notification_outbox", "inbox": "notification_histories", "coupons": "coupons"}

func (c Cond) set() []string {
	var out []string
	for name, k := range conditions {
		if k.set(&c) {
			out = append(out, name)
		}
	}
	if len(c.Any) > 0 {
		out = append(out, "any")
	}
	if len(c.All) > 0 {
		out = append(out, "all")
	}
	sort.Strings(out)
	return out
}

// kind is the registered condition c sets, if it sets one (not a
// combinator); validate has made sure it sets exactly one.
func (c *Cond) kind() (condition, bool) {
	for _, k := range conditions {
		if k.set(c) {
			return k, true
		}
	}
	return condition{}, false
}

func (c Cond) validate() error {
	if set := c.set(); len(set) != 1 {
		return fmt.Errorf("a condition sets exactly one of its fields, this one sets %v", set)
	}
	if k, ok := c.kind(); ok && k.validate != nil {
		return k.validate(&c)
	}
	var errs []error
	for _, sub := range append(slices.Clone(c.Any), c.All...) {
		errs = append(errs, sub.validate())
	}
	return errors.Join(errs...)
}

// sql builds the count query; every value is a parameter.
func (r Rows) sql() (string, []any) {
	var where []string
	var args []any
	add := func(col string, v any) {
		args = append(args, v)
		where = append(where, fmt.Sprintf("%s = $%d", col, len(args)))
	}
	if r.Status != "" {
		add("status", r.Status)
	}
	if r.NotStatus != "" {
		args = append(args, r.NotStatus)
		where = append(where, fmt.Sprintf("status <> $%d", len(args)))
	}
	if r.ClaimedBy != "" {
		add("claimed_by", r.ClaimedBy)
	}
	if r.Reason != "" {
		add("status_reason", r.Reason)
	}
	if r.Advertising {
		add("advertising", true)
	}
	if r.Msg != 0 {
		add("message_id", checker.MessageID(r.Msg))
	}
	q := "SELECT count(*) FROM " + tables[r.Table]
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	return q, args
}

// String describes the condition.
func (c Cond) String() string {
	if k, ok := c.kind(); ok {
		return k.describe(&c)
	}
	var parts []string
	for _, s := range append(slices.Clone(c.Any), c.All...) {
		parts = append(parts, s.String())
	}
	if len(c.Any) > 0 {
		return "any of (" + strings.Join(parts, "; ") + ")"
	}
	return "all of (" + strings.Join(parts, "; ") + ")"
}

// probe evaluates a condition against the live run. base holds, for each
// fresh event condition, the count when the step began.
type probe struct {
	r    *runner
	base map[*EventCond]int
	// traffic holds each traffic condition's count when the probe began.
	traffic map[*TrafficCond]int64
	dedup   *dedupProbe    // a dedup_expired wait's probe
	faults  []faults.Fault // a during step's faults, for fired
}

func (r *runner) newProbe(c *Cond) *probe {
	p := &probe{r: r, base: map[*EventCond]int{}, traffic: map[*TrafficCond]int64{}}
	var walk func(c *Cond)
	walk = func(c *Cond) {
		if c.Traffic != nil {
			if n, err := r.trafficCount(c.Traffic); err == nil {
				p.traffic[c.Traffic] = n
			}
		}
		if c.Event != nil && c.Event.Fresh {
			p.base[c.Event] = checker.Count(r.e.history(), c.Event.Name, c.Event.Pod, c.Event.Attrs)
		}
		for i := range c.Any {
			walk(&c.Any[i])
		}
		for i := range c.All {
			walk(&c.All[i])
		}
	}
	walk(c)
	return p
}

// errFailed marks a condition that can no longer come (a pod that exited
// the wrong way): waiting stops at once.
var errFailed = errors.New("condition failed")

func (p *probe) holds(ctx context.Context, c *Cond) (bool, error) {
	if k, ok := c.kind(); ok {
		return k.holds(ctx, p, c)
	}
	if len(c.Any) > 0 {
		var errs []error
		for i := range c.Any {
			ok, err := p.holds(ctx, &c.Any[i])
			if ok && err == nil {
				return true, nil
			}
			errs = append(errs, err)
		}
		return false, errors.Join(errs...)
	}
	for i := range c.All {
		if ok, err := p.holds(ctx, &c.All[i]); !ok || err != nil {
			return false, err
		}
	}
	return true, nil
}

// killed: the pod exited at its kill-point (SIGKILL, exit 137).
func (p *probe) killed(name string) (bool, error) {
	pod, err := p.r.e.Pod(name)
	if err != nil {
		return false, err
	}
	select {
	case <-pod.Done():
	default:
		return false, nil
	}
	if _, hit := pod.Killpoint(); !hit || pod.ExitCode() != 137 {
		return false, fmt.Errorf("%w: %s exited %d without hitting its kill-point", errFailed, name, pod.ExitCode())
	}
	p.r.e.Logf("harness", "%s killed by SIGKILL at its kill-point", name)
	return true, nil
}

// exited: every pod matching name ("role-" for all of a role) exited; with
// ok, each with status 0.
func (p *probe) exited(name string, ok bool) (bool, error) {
	var found bool
	for _, pod := range p.r.e.Pods() {
		if pod.Name() != name && !(strings.HasSuffix(name, "-") && strings.HasPrefix(pod.Name(), name)) {
			continue
		}
		found = true
		select {
		case <-pod.Done():
		default:
			return false, nil
		}
		if ok && pod.ExitCode() != 0 {
			return false, fmt.Errorf("%w: %s exited %d: %s", errFailed, pod.Name(), pod.ExitCode(), pod.Output())
		}
	}
	if !found {
		return false, fmt.Errorf("no pod %q", name)
	}
	return true, nil
}

// migrators counts the migrate pods waiting on the held migration: polling
// the advisory lock, or blocked behind the uncommitted table.
func (p *probe) migrators(ctx context.Context, want int) (bool, error) {
	h, err := p.r.hold()
	if err != nil {
		return false, err
	}
	bs, err := world.PodBackends(ctx, p.r.e.Pool, p.r.e.appPrefix(), "migrate")
	if err != nil {
		return false, err
	}
	n := 0
	for _, b := range bs {
		if strings.Contains(b.Query, "pg_try_advisory_lock") || slices.Contains(b.BlockedBy, h.PID()) {
			n++
		}
	}
	return n == want, nil
}

// blocked: a connection of the pod waits, inside Postgres, on a lock the
// step's hold owns (not just any waiter: the cleanup's sweep may wait too).
func (p *probe) blocked(ctx context.Context, pod string) (bool, error) {
	h, err := p.r.hold()
	if err != nil {
		return false, err
	}
	role, _, _ := strings.Cut(pod, "-")
	bs, err := world.PodBackends(ctx, p.r.e.Pool, p.r.e.appPrefix(), role)
	if err != nil {
		return false, err
	}
	for _, b := range bs {
		if b.Pod == pod && slices.Contains(b.BlockedBy, h.PID()) {
			return true, nil
		}
	}
	return false, nil
}

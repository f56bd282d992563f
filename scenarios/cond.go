package scenarios

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/outboxchaos/outboxchaos/checker"
	"github.com/outboxchaos/outboxchaos/world"
)

// Cond is an observable condition a step waits for, as data: exactly one
// field is set.
type Cond struct {
	Rows      *Rows      `json:"rows,omitempty"`       // exactly n rows match
	Ledger    int        `json:"ledger,omitempty"`     // at least n messages reached a handset
	Event     *EventCond `json:"event,omitempty"`      // at least n matching events were logged
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
	Any       []Cond     `json:"any,omitempty"`        // one of these holds
	All       []Cond     `json:"all,omitempty"`        // all of these hold
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
	for name, on := range map[string]bool{"rows": c.Rows != nil, "ledger": c.Ledger > 0, "event": c.Event != nil,
		"killed": c.Killed != "", "paused": c.Paused != "", "exited": c.Exited != "", "succeeded": c.Succeeded != "", "in_flight": c.InFlight > 0,
		"copies": c.Copies > 0, "peek_skips": c.PeekSkips > 0, "waiters": c.Waiters > 0, "migrators": c.Migrators > 0,
		"queue": c.Queue != nil, "blocked": c.Blocked != "", "any": len(c.Any) > 0, "all": len(c.All) > 0} {
		if on {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

func (c Cond) validate() error {
	if set := c.set(); len(set) != 1 {
		return fmt.Errorf("a condition sets exactly one of its fields, this one sets %v", set)
	}
	if c.Rows != nil {
		if _, ok := tables[c.Rows.Table]; !ok {
			return fmt.Errorf("rows: unknown table %q (outbox, inbox, coupons)", c.Rows.Table)
		}
	}
	if c.Queue != nil && !slices.Contains(queueNames, c.Queue.Queue) {
		return fmt.Errorf("queue: unknown queue %q (%s)", c.Queue.Queue, strings.Join(queueNames, ", "))
	}
	if c.Event != nil && c.Event.Name == "" {
		return errors.New("event: needs name")
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
	switch {
	case c.Rows != nil:
		q, args := c.Rows.sql()
		return fmt.Sprintf("%d from %s %v", c.Rows.N, q, args)
	case c.Ledger > 0:
		return fmt.Sprintf("%d messages on handsets", c.Ledger)
	case c.Event != nil:
		return fmt.Sprintf("%d× event %s %s %v", max(c.Event.N, 1), c.Event.Name, c.Event.Pod, c.Event.Attrs)
	case c.Killed != "":
		return c.Killed + " killed at its kill-point"
	case c.Paused != "":
		return c.Paused + " frozen at its pause-point"
	case c.Exited != "":
		return c.Exited + " exited"
	case c.Succeeded != "":
		return c.Succeeded + " exited 0"
	case c.InFlight > 0:
		return "a vendor call for " + checker.MessageID(c.InFlight) + " in flight"
	case c.Copies > 0:
		return fmt.Sprintf("%d messages delivered twice", c.Copies)
	case c.PeekSkips > 0:
		return fmt.Sprintf("%d redeliveries skipped at the peek", c.PeekSkips)
	case c.Waiters > 0:
		return fmt.Sprintf("%d backends waiting on the hold", c.Waiters)
	case c.Migrators > 0:
		return fmt.Sprintf("%d migrators at the held migration", c.Migrators)
	case c.Queue != nil:
		return fmt.Sprintf("%d ready in the %s queue", c.Queue.N, c.Queue.Queue)
	case c.Blocked != "":
		return c.Blocked + " waits on the hold inside Postgres"
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
}

func (r *runner) newProbe(c *Cond) *probe {
	p := &probe{r: r, base: map[*EventCond]int{}}
	var walk func(c *Cond)
	walk = func(c *Cond) {
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
	e := p.r.e
	switch {
	case c.Rows != nil:
		q, args := c.Rows.sql()
		n, err := e.Count(ctx, q, args...)
		if err != nil {
			return false, err
		}
		return n == c.Rows.N, nil
	case c.Ledger > 0:
		return len(e.vendor.Ledger()) >= c.Ledger, nil
	case c.Event != nil:
		n := checker.Count(e.history(), c.Event.Name, c.Event.Pod, c.Event.Attrs) - p.base[c.Event]
		return n >= max(c.Event.N, 1), nil
	case c.Killed != "":
		return p.killed(c.Killed)
	case c.Paused != "":
		pod, err := p.r.e.Pod(c.Paused)
		if err != nil {
			return false, err
		}
		return pod.Frozen(), nil
	case c.Exited != "", c.Succeeded != "":
		return p.exited(c.Exited+c.Succeeded, c.Succeeded != "")
	case c.InFlight > 0:
		return e.vendor.Count(checker.MessageID(c.InFlight)) >= 1, nil
	case c.Copies > 0:
		return checker.Copies(e.history()) >= c.Copies, nil
	case c.PeekSkips > 0:
		return checker.PeekSkips(e.history()) >= c.PeekSkips, nil
	case c.Waiters > 0:
		h, err := p.r.hold()
		if err != nil {
			return false, err
		}
		n, err := h.Waiters(ctx)
		return n >= c.Waiters, err
	case c.Migrators > 0:
		return p.migrators(ctx, c.Migrators)
	case c.Blocked != "":
		return p.blocked(ctx, c.Blocked)
	case c.Queue != nil:
		d, err := e.depths()
		if err != nil {
			return false, err
		}
		n := map[string]int{"main": d.Main, "retry": d.Retry, "parking": d.Parking}[c.Queue.Queue]
		return n == c.Queue.N, nil
	case len(c.Any) > 0:
		var errs []error
		for i := range c.Any {
			ok, err := p.holds(ctx, &c.Any[i])
			if ok && err == nil {
				return true, nil
			}
			errs = append(errs, err)
		}
		return false, errors.Join(errs...)
	default:
		for i := range c.All {
			if ok, err := p.holds(ctx, &c.All[i]); !ok || err != nil {
				return false, err
			}
		}
		return true, nil
	}
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

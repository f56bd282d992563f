package scenario

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/outboxchaos/outboxchaos/checker"
	"github.com/outboxchaos/outboxchaos/faults"
	"github.com/outboxchaos/outboxchaos/rig"
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
// same), whether a Cond sets it, and how it is described. Validate is
// optional. How the runner probes it is registered beside (holding).
type condition struct {
	doc      string
	set      func(c *Cond) bool
	describe func(c *Cond) string
	validate func(c *Cond) error
}

// conditions is the registry of conditions. A new condition is its field
// in Cond, a file with its functions, one line here and one in holding. The combinators
// any and all are not in it: they hold conditions, not facts.
var conditions = map[string]condition{
	"rows":       {"exactly n rows of a table match", func(c *Cond) bool { return c.Rows != nil }, describeRows, validateRows},
	"ledger":     {"at least n messages reached a handset", func(c *Cond) bool { return c.Ledger > 0 }, describeLedger, nil},
	"event":      {"at least n matching events were logged", func(c *Cond) bool { return c.Event != nil }, describeEvent, validateEvent},
	"no_event":   {"no matching event was logged (yet)", func(c *Cond) bool { return c.NoEvent != nil }, describeNoEvent, validateNoEvent},
	"killed":     {"the pod died at its kill-point", func(c *Cond) bool { return c.Killed != "" }, describeKilled, nil},
	"paused":     {"the pod froze at its pause-point", func(c *Cond) bool { return c.Paused != "" }, describePaused, nil},
	"exited":     {"the pod (or every pod of role-) exited", func(c *Cond) bool { return c.Exited != "" }, describeExited, nil},
	"succeeded":  {"the pod (or every pod of role-) exited 0", func(c *Cond) bool { return c.Succeeded != "" }, describeSucceeded, nil},
	"in_flight":  {"a send request for outbox row n reached the vendor", func(c *Cond) bool { return c.InFlight > 0 }, describeInFlight, nil},
	"copies":     {"at least n messages delivered twice to a worker", func(c *Cond) bool { return c.Copies > 0 }, describeCopies, nil},
	"peek_skips": {"at least n redeliveries skipped at the peek", func(c *Cond) bool { return c.PeekSkips > 0 }, describePeekSkips, nil},
	"waiters":    {"at least n backends wait on the step's hold", func(c *Cond) bool { return c.Waiters > 0 }, describeWaiters, nil},
	"migrators":  {"n migrate pods wait on the step's held migration", func(c *Cond) bool { return c.Migrators > 0 }, describeMigrators, nil},
	"queue":      {"a queue holds exactly n ready messages", func(c *Cond) bool { return c.Queue != nil }, describeQueue, validateQueue},
	"blocked":    {"the pod's connection waits on the step's hold", func(c *Cond) bool { return c.Blocked != "" }, describeBlocked, nil},
	"fired":      {"every fault of the during step met the pipeline", func(c *Cond) bool { return c.Fired }, describeFired, nil},
	"traffic": {"a link carried n publish, confirm, return or statement messages since the step began",
		func(c *Cond) bool { return c.Traffic != nil }, describeTraffic, validateTraffic},
	"dedup_expired": {"the run's JetStream forgot every message id published before the wait (its duplicate window passed)",
		func(c *Cond) bool { return c.DedupExpired }, describeDedupExpired, nil},
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

// tables are the tables a Rows condition may count, by the name it gives
// them.
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
	k, ok := conditions[c.Kind()]
	return k, ok
}

// Kind is the name of the registered condition c sets, "" for a
// combinator (any, all).
func (c *Cond) Kind() string {
	for name, k := range conditions {
		if k.set(c) {
			return name
		}
	}
	return ""
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

// A traffic condition holds once a link carried n protocol messages of a
// kind since the step began: what the harness sees a pod do on its link
// without the pod's help (no log line, no kill-point), so it times a kill
// from outside in a relay written in any language. Publishes and
// statements are counted as the pod sends them, confirms and returns as
// the server sends them, before any fault on the link acts on them: a
// publish a stall swallows still counts.
type TrafficCond struct {
	Link    string `json:"link"`
	Message string `json:"message"`     // publish, confirm, return or statement
	N       int    `json:"n,omitempty"` // at least n; default 1
}

// Want is how many messages the condition waits for (N, at least one).
func (t *TrafficCond) Want() int64 { return int64(max(t.N, 1)) }

func describeTraffic(c *Cond) string {
	return fmt.Sprintf("%d %s message(s) on %s since the step began", c.Traffic.Want(), c.Traffic.Message, c.Traffic.Link)
}

func validateTraffic(c *Cond) error {
	t := c.Traffic
	var kinds []string
	for _, m := range rig.Messages {
		kinds = append(kinds, string(m))
	}
	switch {
	case !slices.Contains(faults.LinkNames, t.Link):
		return fmt.Errorf("traffic: unknown link %q (%s)", t.Link, strings.Join(faults.LinkNames, ", "))
	case !slices.Contains(kinds, t.Message):
		return fmt.Errorf("traffic: unknown message %q (%s)", t.Message, strings.Join(kinds, ", "))
	case t.N < 0:
		return fmt.Errorf("traffic: n %d is negative", t.N)
	}
	return nil
}

// SQL builds the count query; every value is a parameter.
func (r Rows) SQL() (string, []any) {
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

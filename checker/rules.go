package checker

import (
	"errors"
	"fmt"
	"sort"

	"github.com/outboxchaos/outboxchaos/history"
)

// Rule is one row-specific expectation of a scenario, as data: the name of
// the rule and its parameters. Rules read a Record, never a live system.
//
//	{"rule": "alerts", "kind": "EXPIRED", "n": 6}
type Rule struct {
	Rule   string `json:"rule"`
	N      int    `json:"n,omitempty"`
	Kind   string `json:"kind,omitempty"`   // alerts: the alert kind
	Status string `json:"status,omitempty"` // inbox-all: the status every row has; settled: the settlement
	Msg    int64  `json:"msg,omitempty"`    // vendor-calls: the outbox id
	Event  string `json:"event,omitempty"`  // events: the event name
	Pod    string `json:"pod,omitempty"`    // events, late-mark: the pod ("relay-" for every relay)
}

// ruleFunc judges one rule against a record and its verdict.
type ruleFunc func(r Rule, rec Record, v Verdict) error

var rules = map[string]struct {
	doc string
	fn  ruleFunc
}{
	"all-once": {"every intent reached a handset exactly once, nothing lost", func(_ Rule, _ Record, v Verdict) error {
		return errors.Join(want("delivered once", v.DeliveredOnce, v.Intents), want("lost visibly", v.LostVisibly, 0))
	}},
	"lost": {"exactly n intents lost visibly, the rest delivered once", func(r Rule, _ Record, v Verdict) error {
		return errors.Join(want("lost visibly", v.LostVisibly, r.N), want("delivered once", v.DeliveredOnce, v.Intents-r.N))
	}},
	"alerts": {"exactly n alerts of kind", func(r Rule, rec Record, _ Verdict) error {
		n := 0
		for _, a := range rec.State.Alerts {
			if a.Kind == r.Kind {
				n++
			}
		}
		return want(r.Kind+" alerts", n, r.N)
	}},
	"ledger": {"exactly n messages reached a handset", func(r Rule, rec Record, _ Verdict) error {
		return want("handset ledger entries", len(rec.State.Ledger), r.N)
	}},
	"error-delivered": {"exactly n ERROR inbox rows whose message reached the handset", func(r Rule, _ Record, v Verdict) error {
		return want("ERROR rows that reached the handset", v.ErrorDelivered, r.N)
	}},
	"copies": {"at least n messages delivered to a worker more than once", func(r Rule, rec Record, _ Verdict) error {
		return atLeast("messages delivered more than once", Copies(rec.History), r.N)
	}},
	"peek-skips": {"at least n redeliveries skipped at the peek", func(r Rule, rec Record, _ Verdict) error {
		return atLeast("redeliveries skipped at the peek", PeekSkips(rec.History), r.N)
	}},
	"events": {"at least n events called event logged by pod", func(r Rule, rec Record, _ Verdict) error {
		return atLeast(fmt.Sprintf("%s events of %s", r.Event, r.Pod), Count(rec.History, r.Event, r.Pod, nil), r.N)
	}},
	"inbox-all": {"every inbox row has status", func(r Rule, rec Record, _ Verdict) error {
		for _, row := range rec.State.Inbox {
			if row.Status != r.Status {
				return fmt.Errorf("inbox row %s is %s, want every row %s", row.MessageID, row.Status, r.Status)
			}
		}
		return nil
	}},
	"vendor-calls": {"exactly n send requests for outbox row msg", func(r Rule, rec Record, _ Verdict) error {
		mid, n := MessageID(r.Msg), 0
		for _, c := range rec.State.VendorCalls {
			if c.RefKey == mid {
				n++
			}
		}
		return want("vendor calls for "+mid, n, r.N)
	}},
	"confirmed-publishes": {"exactly n publishes of outbox row msg a relay logged as confirmed (a finished message is not published again)", func(r Rule, rec Record, _ Verdict) error {
		n := Count(rec.History, history.Publish, "relay-", map[string]string{history.KeyMessageID: MessageID(r.Msg), history.KeyOutcome: history.OutcomeConfirmed})
		return want("confirmed publishes of "+MessageID(r.Msg), n, r.N)
	}},
	"settled": {"exactly n inbox rows settled by the reconciler as status (RECONCILED_SENT, RECONCILED_FAILED, RESENT)", func(r Rule, rec Record, _ Verdict) error {
		n := 0
		for _, row := range rec.State.Inbox {
			if row.Settled == r.Status {
				n++
			}
		}
		return want("inbox rows settled "+r.Status, n, r.N)
	}},
	"parked":           {"exactly n messages parked, each with its x-failure-reason and a PARKED alert naming it", parkedWithReason},
	"disjoint-claims":  {"no outbox row claimed by two relay runs", disjointClaims},
	"returned-counted": {"a publish that came back returned counts as a failed attempt", returnedCounted},
	"late-mark": {"the pod's second mark wrote exactly n rows (it lost every lease)", func(r Rule, rec Record, _ Verdict) error {
		got := -1
		var marks []history.Event
		for _, e := range rec.Events(history.Mark) {
			if e.Pod == r.Pod {
				marks = append(marks, e)
			}
		}
		if len(marks) >= 2 {
			n, _ := marks[1].Int(history.KeyCount)
			got = int(n)
		}
		return want("rows "+r.Pod+" marked in its second run", got, r.N)
	}},
}

// RuleNames lists the known rules with what each checks.
func RuleNames() map[string]string {
	out := map[string]string{}
	for name, r := range rules {
		out[name] = r.doc
	}
	return out
}

// Validate reports an unknown rule name.
func (r Rule) Validate() error {
	if _, ok := rules[r.Rule]; ok {
		return nil
	}
	var names []string
	for n := range rules {
		names = append(names, n)
	}
	sort.Strings(names)
	return fmt.Errorf("unknown rule %q (known: %v)", r.Rule, names)
}

// Eval judges the rule against a record and its verdict.
func (r Rule) Eval(rec Record, v Verdict) error {
	if err := r.Validate(); err != nil {
		return err
	}
	return rules[r.Rule].fn(r, rec, v)
}

// Verify judges a whole record: the verdict from history and state, then
// every reason the run fails beyond the contract — a harness error, a
// fault that never fired, a row-specific rule. The run passes when the
// error is nil and the verdict is OK.
func Verify(rec Record) (Verdict, error) {
	v := Judge(rec.History, rec.Faults, rec.State)
	if rec.HarnessError != "" {
		return v, errors.New(rec.HarnessError)
	}
	if err := FaultsFired(rec.Faults, rec.AllowUnfired); err != nil {
		return v, err
	}
	var errs []error
	for _, r := range rec.Expect {
		errs = append(errs, r.Eval(rec, v))
	}
	return v, errors.Join(errs...)
}

func want(what string, got, want int) error {
	if got != want {
		return fmt.Errorf("%s: want %d, got %d", what, want, got)
	}
	return nil
}

func atLeast(what string, got, n int) error {
	if got < n {
		return fmt.Errorf("%s: want at least %d, got %d", what, n, got)
	}
	return nil
}

func disjointClaims(_ Rule, rec Record, _ Verdict) error {
	owner := map[int64]string{}
	for _, e := range rec.Events(history.Claim) {
		for _, id := range e.IDs(history.KeyIDs) {
			if prev, ok := owner[id]; ok {
				return fmt.Errorf("outbox row %d claimed by %s and again by %s", id, prev, e.Pod)
			}
			owner[id] = e.Pod
		}
	}
	if len(owner) == 0 {
		return fmt.Errorf("no claim events recorded")
	}
	return nil
}

func returnedCounted(_ Rule, rec Record, _ Verdict) error {
	returned := map[int64]bool{}
	for _, e := range rec.Events(history.Publish) {
		if e.Str(history.KeyOutcome) == history.OutcomeReturned {
			id, _ := e.Int(history.KeyOutboxID)
			returned[id] = true
		}
	}
	if len(returned) == 0 {
		return fmt.Errorf("no publish was returned")
	}
	var errs []error
	for _, r := range rec.State.Outbox {
		if returned[r.ID] && r.Attempts == 0 {
			errs = append(errs, fmt.Errorf("row %d was returned but not counted as a failed attempt", r.ID))
		}
	}
	return errors.Join(errs...)
}

// parkedWithReason: every parked message carries the reason it was parked
// (x-failure-reason, for the operator who moves it back) and a PARKED
// alert names it; there are exactly r.N of them.
func parkedWithReason(r Rule, rec Record, _ Verdict) error {
	alerted := map[string]bool{}
	for _, a := range rec.State.Alerts {
		if a.Kind == history.AlertParked {
			alerted[a.MessageID] = true
		}
	}
	var errs []error
	for _, p := range rec.State.Parked {
		if p.Reason == "" || p.Reason == "<nil>" {
			errs = append(errs, fmt.Errorf("parked %s has no x-failure-reason", p.MessageID))
		}
		if !alerted[p.MessageID] {
			errs = append(errs, fmt.Errorf("parked %s has no PARKED alert", p.MessageID))
		}
	}
	return errors.Join(append(errs, want("parked messages", len(rec.State.Parked), r.N))...)
}

package scenarios

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/outboxchaos/outboxchaos/faults"
)

func all(errs ...error) error { return errors.Join(errs...) }

func expectInt(what string, got, want int) error {
	if got != want {
		return fmt.Errorf("%s: want %d, got %d", what, want, got)
	}
	return nil
}

// allOnce: every intent reached a handset exactly once, nothing lost.
func allOnce(_ *Env, _ State, v Verdict) error {
	return all(expectInt("delivered once", v.DeliveredOnce, v.Intents), expectInt("lost visibly", v.LostVisibly, 0))
}

// lost: exactly n visibly lost, the rest delivered once.
func lost(n int) func(*Env, State, Verdict) error {
	return func(_ *Env, _ State, v Verdict) error {
		return all(expectInt("lost visibly", v.LostVisibly, n), expectInt("delivered once", v.DeliveredOnce, v.Intents-n))
	}
}

func alertsOfKind(s State, kind string, want int) error {
	n := 0
	for _, a := range s.Alerts {
		if a.Kind == kind {
			n++
		}
	}
	return expectInt(kind+" alerts", n, want)
}

func ledgerSize(s State, want int) error {
	return expectInt("handset ledger entries", len(s.Ledger), want)
}

func ledgerAtLeast(e *Env, n int) func(context.Context) (bool, error) {
	return func(context.Context) (bool, error) { return len(e.Vendor.Ledger()) >= n, nil }
}

// deliveriesPerMessage counts worker deliveries by message_id.
func deliveriesPerMessage(e *Env) map[string]int {
	out := map[string]int{}
	for _, ev := range e.Events("delivery") {
		out[ev.Str("message_id")]++
	}
	return out
}

// copiesSeen: at least n message_ids were delivered to a worker more than
// once (proof that the fault produced copies the inbox had to absorb).
func copiesSeen(e *Env, n int) error {
	got := 0
	for _, c := range deliveriesPerMessage(e) {
		if c > 1 {
			got++
		}
	}
	if got < n {
		return fmt.Errorf("want at least %d messages delivered more than once, got %d", n, got)
	}
	return nil
}

func peekSkipEvents(e *Env) []faults.Event {
	var out []faults.Event
	for _, ev := range e.Events("ack") {
		if ev.Str("why") == "history row exists" {
			out = append(out, ev)
		}
	}
	return out
}

func peekSkips(e *Env, n int) error {
	if got := len(peekSkipEvents(e)); got < n {
		return fmt.Errorf("want at least %d redeliveries skipped at the peek, got %d", n, got)
	}
	return nil
}

// disjointClaims: no outbox id appears in the claims of two relay runs.
func disjointClaims(e *Env) error {
	owner := map[int64]string{}
	for _, ev := range e.Events("claim") {
		ids, _ := ev.Attrs["ids"].([]any)
		for _, x := range ids {
			f, _ := x.(float64)
			id := int64(f)
			if prev, ok := owner[id]; ok {
				return fmt.Errorf("outbox row %d claimed by %s and again by %s", id, prev, ev.Pod)
			}
			owner[id] = ev.Pod
		}
	}
	if len(owner) == 0 {
		return fmt.Errorf("no claim events recorded")
	}
	return nil
}

// countEvents counts events name logged by pods whose name starts with role.
func countEvents(e *Env, name, role string) int {
	n := 0
	for _, ev := range e.Events(name) {
		if strings.HasPrefix(ev.Pod, role+"-") {
			n++
		}
	}
	return n
}

// inboxAll: every history row has status.
func inboxAll(s State, status string) error {
	for _, r := range s.Inbox {
		if r.Status != status {
			return fmt.Errorf("inbox row %s is %s, want every row %s", r.MessageID, r.Status, status)
		}
	}
	return nil
}

// podEvents returns the events name logged by pod, in order.
func podEvents(e *Env, name, pod string) []faults.Event {
	var out []faults.Event
	for _, ev := range e.Events(name) {
		if ev.Pod == pod {
			out = append(out, ev)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At.Before(out[j].At) })
	return out
}

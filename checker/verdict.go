package checker

import (
	"fmt"
	"strings"

	"github.com/outboxchaos/outboxchaos/history"
)

// Verdict is the checker's answer, in the vocabulary of Jepsen's queue
// checkers plus ours (lost visibly, stuck): each invariant's result
// (Invariants), the counts of violations the older invariants add to
// (duplicated, lost silently, unexpected, stuck, misreconciled, alert,
// backoff, republished: what runs were recorded with), and what the run
// observed (each intent's fate, settlements, calls, faults fired).
type Verdict struct {
	Intents        int `json:"intents"`
	DeliveredOnce  int `json:"delivered_once"`
	Duplicated     int `json:"duplicated"`
	LostSilently   int `json:"lost_silently"`
	LostVisibly    int `json:"lost_visibly"`
	Skipped        int `json:"skipped"`  // consent withdrawn / unregistered number: not sent on purpose
	Deferred       int `json:"deferred"` // ads postponed past the run by the 20:40 cut-off
	Unexpected     int `json:"unexpected"`
	Stuck          int `json:"stuck"`
	ErrorDelivered int `json:"error_delivered"` // ERROR rows whose message did reach the handset
	// Reconciliation: rows settled from the vendor's report, and the
	// settlements the handset ledger contradicts (must be 0).
	ReconciledSent   int `json:"reconciled_sent,omitempty"`
	ReconciledFailed int `json:"reconciled_failed,omitempty"` // a visible loss that is now certain
	Resent           int `json:"resent,omitempty"`            // rows re-sent at least once
	Misreconciled    int `json:"misreconciled,omitempty"`
	// Unknown counts the visible losses still awaiting an operator: ERROR
	// rows whose outcome nobody settled.
	Unknown int `json:"unknown,omitempty"`
	// AlertBroken counts breaks of the alert contract (AlertContract): a
	// loss or a parked message without the alert of its kind, a parked
	// message without its reason, a row past alert-attempt failures
	// without its RELAY_ATTEMPTS alert.
	AlertBroken int `json:"alert_broken,omitempty"`
	// BackoffBroken counts failed publishes whose next attempt was not
	// due one backoff step later (BackoffViolations).
	BackoffBroken int `json:"backoff_broken,omitempty"`
	// Republished counts rows published, or copies delivered, more often
	// than the history explains (RepublishViolations).
	Republished int `json:"republished,omitempty"`
	// From the history (Judge): vendor calls, publishes, faults fired by kind.
	VendorCalls int            `json:"vendor_calls,omitempty"`
	Publishes   int            `json:"publishes,omitempty"`
	FaultsFired map[string]int `json:"faults_fired,omitempty"`
	// Details name each bad or visible case: "duplicated notification-outbox-3 ×2".
	Details []string `json:"details,omitempty"`
	// Invariants are each invariant's result, in registry order (absent
	// from runs recorded before invariants were named).
	Invariants []Result `json:"invariants,omitempty"`
}

// OK reports whether the contract holds: every invariant is valid. A
// verdict recorded before invariants were named holds when its counts of
// violations are zero.
func (v Verdict) OK() bool {
	if len(v.Invariants) > 0 {
		return len(v.Broken()) == 0
	}
	return v.Duplicated == 0 && v.LostSilently == 0 && v.Unexpected == 0 && v.Stuck == 0 && v.Misreconciled == 0 &&
		v.AlertBroken == 0 && v.BackoffBroken == 0 && v.Republished == 0
}

// Broken names the invariants that do not hold, in registry order.
func (v Verdict) Broken() []string {
	var out []string
	for _, r := range v.Invariants {
		if !r.Valid {
			out = append(out, r.Name)
		}
	}
	return out
}

// String is the one-line summary; the reconciliation counts follow when
// any is set, then every broken invariant that has no count of its own.
func (v Verdict) String() string {
	s := fmt.Sprintf("intents=%d delivered_once=%d duplicated=%d lost_silently=%d lost_visibly=%d skipped=%d deferred=%d unexpected=%d stuck=%d",
		v.Intents, v.DeliveredOnce, v.Duplicated, v.LostSilently, v.LostVisibly, v.Skipped, v.Deferred, v.Unexpected, v.Stuck)
	if v.ReconciledSent+v.ReconciledFailed+v.Resent+v.Misreconciled > 0 {
		s += fmt.Sprintf(" reconciled_sent=%d reconciled_failed=%d resent=%d misreconciled=%d",
			v.ReconciledSent, v.ReconciledFailed, v.Resent, v.Misreconciled)
	}
	if v.AlertBroken > 0 {
		s += fmt.Sprintf(" alert_broken=%d", v.AlertBroken)
	}
	if v.BackoffBroken > 0 {
		s += fmt.Sprintf(" backoff_broken=%d", v.BackoffBroken)
	}
	if v.Republished > 0 {
		s += fmt.Sprintf(" republished=%d", v.Republished)
	}
	for _, r := range v.Invariants {
		if inv, ok := invariant(r.Name); !r.Valid && (!ok || inv.Counter == nil) {
			s += fmt.Sprintf(" %s=%d", r.Name, r.Violations)
		}
	}
	return s
}

// Explain joins the details for a failure message.
func (v Verdict) Explain() string { return strings.Join(v.Details, "\n  ") }

// Check judges a final state alone (no history, no faults): Judge with an
// empty history. It never talks to a service.
func Check(s State) Verdict { return Judge(nil, nil, s) }

// Judge is the pure checker: it runs every registered invariant on the
// run's history, faults and final state and composes their results into
// one verdict (as Jepsen's compose does), beside what the run observed:
// each intent's fate (Tally), how many vendor calls and publishes were
// attempted, and which faults fired, by kind.
func Judge(h []history.Event, faults []FaultRecord, s State) Verdict {
	in := Input{History: h, Faults: faults, State: s, Tally: NewTally(s)}
	if in.Tally.Audit != nil {
		in.State.Intents = in.Tally.Audit.Intents() // what the harness's rows call for
	}
	var v Verdict
	in.Tally.observe(&v)
	for _, inv := range Invariants {
		if inv.Needs != nil {
			if why := inv.Needs(s); why != "" {
				v.Invariants = append(v.Invariants, Result{Name: inv.Name, Valid: true, NotJudged: why})
				continue
			}
		}
		d := inv.Check(in)
		v.Invariants = append(v.Invariants, Result{Name: inv.Name, Valid: len(d) == 0, Violations: len(d)})
		v.Details = append(v.Details, d...)
		if inv.Counter != nil {
			*inv.Counter(&v) += len(d)
		}
	}
	for _, ev := range h {
		switch ev.Name {
		case history.VendorCall:
			v.VendorCalls++
		case history.Publish:
			v.Publishes++
		}
	}
	for _, f := range faults {
		if f.Fired {
			if v.FaultsFired == nil {
				v.FaultsFired = map[string]int{}
			}
			v.FaultsFired[f.Kind]++
		}
	}
	return v
}

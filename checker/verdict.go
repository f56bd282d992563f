package checker

import (
	"fmt"
	"sort"
	"strings"
)

// Verdict is the checker's answer, in the vocabulary of Jepsen's queue
// checkers plus ours (lost visibly, stuck).
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
}

// OK reports whether the contract holds: nothing twice, nothing lost
// silently, nothing unexpected, nothing stuck, no settlement that the
// handset ledger contradicts, and every loss told by the alert of its kind.
func (v Verdict) OK() bool {
	return v.Duplicated == 0 && v.LostSilently == 0 && v.Unexpected == 0 && v.Stuck == 0 && v.Misreconciled == 0 &&
		v.AlertBroken == 0 && v.BackoffBroken == 0 && v.Republished == 0
}

// String is the one-line summary; the reconciliation counts follow when
// any is set.
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
	return s
}

// Check is the pure checker: final state → verdict. It never talks to a
// service.
func Check(s State) Verdict {
	var v Verdict
	detail := func(format string, args ...any) { v.Details = append(v.Details, fmt.Sprintf(format, args...)) }

	byKey := map[string]OutboxRow{}
	byMID := map[string]OutboxRow{}
	for _, r := range s.Outbox {
		byKey[r.DedupKey] = r
		byMID[MessageID(r.ID)] = r
	}
	inbox := map[string]InboxRow{}
	for _, r := range s.Inbox {
		inbox[r.MessageID] = r
		// A refkey the worker claimed under another message_id format
		// still belongs to its outbox row: duplicates are counted by
		// dedup_key too.
		if _, ok := byMID[r.MessageID]; !ok {
			if row, ok := byKey[r.DedupKey]; ok && r.DedupKey != "" {
				byMID[r.MessageID] = row
			}
		}
	}
	handset := map[string]int{}
	keyHandset := map[string]int{}
	registered := map[string]bool{}
	for _, p := range s.Registered {
		registered[p] = true
	}
	for _, e := range s.Ledger {
		handset[e.RefKey]++
		row, ok := byMID[e.RefKey]
		switch {
		case !ok:
			v.Unexpected++
			detail("unexpected: handset got refkey %q that no outbox row owns", e.RefKey)
			continue
		case !s.Production && !registered[e.Phone]:
			v.Unexpected++
			detail("unexpected: %s sent to unregistered number %s", e.RefKey, e.Phone)
		}
		keyHandset[row.DedupKey]++
	}
	alerted := func(r OutboxRow) bool {
		mid := MessageID(r.ID)
		for _, a := range s.Alerts {
			if (a.OutboxID != 0 && a.OutboxID == r.ID) || (a.MessageID != "" && a.MessageID == mid) || (a.DedupKey != "" && a.DedupKey == r.DedupKey) {
				return true
			}
		}
		return false
	}
	// lost counts a row that never reached the handset, in state what:
	// visibly if an alert names it, silently if none does.
	lost := func(r OutboxRow, what string) {
		if alerted(r) {
			v.LostVisibly++
			detail("lost visibly: %s %s with alert", MessageID(r.ID), what)
		} else {
			v.LostSilently++
			detail("lost silently: %s %s without an alert", MessageID(r.ID), what)
		}
	}
	alertedKey := func(key string) bool {
		for _, a := range s.Alerts {
			if a.DedupKey == key {
				return true
			}
		}
		return false
	}
	workerSkip := map[string]bool{}
	for _, m := range s.WorkerSkips {
		workerSkip[m] = true
	}
	parked := map[string]string{}
	for _, p := range s.Parked {
		parked[p.MessageID] = p.Reason
	}

	intents := append([]string(nil), s.Intents...)
	seen := map[string]bool{}
	for _, k := range intents {
		seen[k] = true
	}
	for _, r := range s.Outbox {
		if !seen[r.DedupKey] {
			intents = append(intents, r.DedupKey) // enqueued without a known intent: still owed
			seen[r.DedupKey] = true
		}
	}
	sort.Strings(intents)
	v.Intents = len(intents)

	for _, key := range intents {
		row, enqueued := byKey[key]
		if !enqueued {
			if alertedKey(key) {
				v.LostVisibly++
				detail("lost visibly: %s never enqueued, alerted", key)
			} else {
				v.LostSilently++
				detail("lost silently: %s never enqueued and no alert", key)
			}
			continue
		}
		mid := MessageID(row.ID)
		n := handset[mid]
		if kn := keyHandset[key]; kn > n {
			n = kn
		}
		ib, hasInbox := inbox[mid]
		v.countSettlement(ib, n, detail)
		if n > 1 {
			v.Duplicated++
			detail("duplicated: %s (%s) reached the handset %d times", key, mid, n)
			continue
		}
		if n == 1 {
			v.DeliveredOnce++
			if hasInbox && ib.Status == "ERROR" {
				v.ErrorDelivered++
			}
			continue
		}
		// Not delivered: it must be visibly lost, skipped on purpose, or
		// (before quiescence) stuck.
		switch {
		case row.Status == "SKIPPED" || (!hasInbox && workerSkip[mid]):
			if why := unowedSkip(s, row, registered); why != "" {
				v.LostSilently++
				detail("lost silently: %s skipped, but %s", mid, why)
				continue
			}
			v.Skipped++
		case row.Status == "EXPIRED" || row.Status == "FAILED":
			lost(row, row.Status)
		case row.Status == "PENDING" && row.Deferred:
			v.Deferred++
			detail("deferred: %s due after the run", mid)
		case row.Status == "PENDING" || row.Status == "PUBLISHING":
			v.Stuck++
			detail("stuck: %s outbox %s", mid, row.Status)
		case hasInbox && (ib.Status == "SENDING" || ib.Status == "RESENDING"):
			v.Stuck++
			detail("stuck: %s inbox %s", mid, ib.Status)
		case hasInbox && (ib.Status == "ERROR" || ib.Status == "FAILED"):
			if ib.Status == "ERROR" && ib.Settled == "" && alerted(row) {
				v.Unknown++
			}
			lost(row, "inbox "+ib.Status)
		case hasInbox && ib.Status == "SENT":
			v.LostSilently++
			detail("lost silently: %s inbox SENT but the handset never got it", mid)
		case isParked(parked, mid):
			lost(row, "parked ("+parked[mid]+")")
		case s.Queues.Main > 0 || s.Queues.Retry > 0:
			v.Stuck++
			detail("stuck: %s still queued", mid)
		default:
			v.LostSilently++
			detail("lost silently: %s published, never sent, no inbox row, not parked", mid)
		}
	}
	if !s.Settled {
		v.Stuck++
		detail("stuck: the run did not reach quiescence before its deadline")
	}
	for _, d := range AlertContract(s) {
		v.AlertBroken++
		detail("%s", d)
	}
	return v
}

// unowedSkip says why a skipped row was owed a send ("" if the skip was
// right): the ground truth of the business tables (State.Consent) has the
// member consenting and active, and the number may receive (production,
// or registered). A pipeline that says "skipped" is not believed on its
// word.
func unowedSkip(s State, row OutboxRow, registered map[string]bool) string {
	if s.Consent == nil || row.MemberID == 0 {
		return ""
	}
	if ok, found := s.Consent[row.MemberID]; !found || !ok {
		return ""
	}
	if !s.Production && !registered[row.Phone] {
		return ""
	}
	return fmt.Sprintf("member %d consents and %s may receive", row.MemberID, row.Phone)
}

// isParked reports whether a copy of mid was left in the parking queue,
// with its reason or without (the alert contract judges the reason).
func isParked(parked map[string]string, mid string) bool {
	_, ok := parked[mid]
	return ok
}

// countSettlement counts how the reconciler settled an inbox row whose
// message reached the handset n times, and a settlement the ledger
// contradicts: FAILED yet delivered. (SENT yet never delivered is already
// a silent loss.)
func (v *Verdict) countSettlement(ib InboxRow, n int, detail func(string, ...any)) {
	switch ib.Settled {
	case SettledSent:
		v.ReconciledSent++
	case SettledFailed:
		v.ReconciledFailed++
		if n > 0 {
			v.Misreconciled++
			detail("misreconciled: %s settled FAILED but reached the handset %d times", ib.MessageID, n)
		}
	}
	if ib.Resends > 0 {
		v.Resent++
	}
}

// Explain joins the details for a failure message.
func (v Verdict) Explain() string { return strings.Join(v.Details, "\n  ") }

// Judge is Check plus what only the history tells: the backoff schedule
// each failed publish followed, the republish bound, how many vendor calls and publishes were
// attempted, and which faults fired, by kind. It is as
// pure as Check.
func Judge(history []Event, faults []FaultRecord, s State) Verdict {
	v := Check(s)
	for _, d := range BackoffViolations(history, s.Backoff) {
		v.BackoffBroken++
		v.Details = append(v.Details, d)
	}
	for _, d := range RepublishViolations(history, faults) {
		v.Republished++
		v.Details = append(v.Details, d)
	}
	for _, ev := range history {
		switch ev.Name {
		case "vendor-call":
			v.VendorCalls++
		case "publish":
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

package checker

import (
	"fmt"
	"slices"

	"github.com/outboxchaos/outboxchaos/history"
)

// alertContract: every loss is told by the alert of its kind, every
// parked message carries its reason, every row past alert-attempt failed
// publishes has its RELAY_ATTEMPTS alert (AlertContract).
var alertContract = Invariant{
	Name:    "alert-contract",
	Doc:     "every loss told by the alert of its kind; parked messages carry their reason; RELAY_ATTEMPTS at alert-attempt",
	Check:   func(in Input) []string { return AlertContract(in.State) },
	Counter: func(v *Verdict) *int { return &v.AlertBroken },
}

// alertsFor names the alert kinds that may account for each final state:
// a row in that state must be named by an alert of one of them. A visible
// loss whose only alert is of another kind (an EXPIRED row named by a
// PARKED alert) is still a broken contract: the operator was told the
// wrong thing.
var alertsFor = map[string][]string{
	"outbox EXPIRED": {history.AlertExpired},
	"outbox FAILED":  {history.AlertRelayFailed},
	"inbox ERROR":    {history.AlertVendorUnknown, history.AlertSendingTimeout, history.AlertResultWriteFailed, history.AlertReconcileStuck},
	"inbox FAILED":   {history.AlertReconciledFailed, history.AlertParked}, // settled so, or a park on record
	"parked":         {history.AlertParked},
	"never enqueued": {history.AlertAnniversaryLost},
	"relay attempts": {history.AlertRelayAttempts},
}

// AlertContract lists every way the state breaks the alert contract (a
// loss is visible as the alert of its kind):
//   - an EXPIRED or FAILED outbox row, an ERROR or FAILED inbox row, a
//     parked message or an intent never enqueued that some alert names is
//     named by one of the kind alertsFor gives (one no alert names is a
//     silent loss, which Check counts already, unless it reached the
//     handset anyway);
//   - every parked message carries its x-failure-reason, and is named
//     by a PARKED alert or, when its inbox row ended ERROR or FAILED, by
//     an alert of that row's kind (a worker that died between the copy
//     and the park's record: cleanup's alert tells that loss);
//   - every outbox row that failed at least AlertAttempt times (when the
//     state knows AlertAttempt) is named by a RELAY_ATTEMPTS alert.
//
// An alert names a row by outbox id, message_id or dedup key. Extra alerts
// are never a violation: telling an operator twice is the price of never
// telling them none.
func AlertContract(s State) []string {
	named := map[string]map[string]bool{} // kind → the ids, message_ids and keys it names
	for _, a := range s.Alerts {
		m := named[a.Kind]
		if m == nil {
			m = map[string]bool{}
			named[a.Kind] = m
		}
		if a.OutboxID != 0 {
			m[fmt.Sprintf("#%d", a.OutboxID)] = true
		}
		for _, k := range []string{a.MessageID, a.DedupKey} {
			if k != "" {
				m[k] = true
			}
		}
	}
	byMID := map[string]OutboxRow{}
	for _, r := range s.Outbox {
		byMID[MessageID(r.ID)] = r
	}
	// has reports whether an alert of a kind allowed for state names the
	// row (known by any of its names).
	has := func(state string, names ...string) bool {
		for _, kind := range alertsFor[state] {
			for _, n := range names {
				if n != "" && named[kind][n] {
					return true
				}
			}
		}
		return false
	}
	rowNames := func(r OutboxRow) []string {
		return []string{fmt.Sprintf("#%d", r.ID), MessageID(r.ID), r.DedupKey}
	}
	midNames := func(mid, key string) []string {
		names := []string{mid, key}
		if r, ok := byMID[mid]; ok {
			names = append(names, rowNames(r)...)
		}
		return names
	}
	anyAlert := func(names ...string) bool {
		for _, m := range named {
			for _, n := range names {
				if n != "" && m[n] {
					return true
				}
			}
		}
		return false
	}
	var out []string
	// wrongKind records a loss told by alerts of none of its kinds.
	wrongKind := func(state, who string, names ...string) {
		if anyAlert(names...) && !has(state, names...) {
			out = append(out, fmt.Sprintf("alert contract: %s %s is alerted, but by no %v alert", state, who, alertsFor[state]))
		}
	}
	enqueued := map[string]bool{}
	for _, r := range s.Outbox {
		enqueued[r.DedupKey] = true
		if r.Status == history.OutboxExpired || r.Status == history.OutboxFailed {
			wrongKind("outbox "+r.Status, MessageID(r.ID), rowNames(r)...)
		}
		if s.AlertAttempt > 0 && r.Attempts >= s.AlertAttempt && !has("relay attempts", rowNames(r)...) {
			out = append(out, fmt.Sprintf("alert contract: %s failed %d publishes (alert-attempt %d) without a %s alert",
				MessageID(r.ID), r.Attempts, s.AlertAttempt, history.AlertRelayAttempts))
		}
	}
	for _, k := range s.Intents {
		if !enqueued[k] {
			wrongKind("never enqueued", k, k)
		}
	}
	for _, r := range s.Inbox {
		if r.Status == history.InboxError || r.Status == history.InboxFailed {
			wrongKind("inbox "+r.Status, r.MessageID, midNames(r.MessageID, r.DedupKey)...)
		}
	}
	inboxState := map[string]string{}
	for _, r := range s.Inbox {
		if r.Status == history.InboxError || r.Status == history.InboxFailed {
			inboxState[r.MessageID] = "inbox " + r.Status
		}
	}
	for _, p := range s.Parked {
		if p.Reason == "" || p.Reason == "<nil>" {
			out = append(out, fmt.Sprintf("alert contract: parked %s has no x-failure-reason", p.MessageID))
		}
		names := midNames(p.MessageID, "")
		// A worker that dies between the parking copy and the park's
		// record leaves its claim SENDING, and cleanup tells the loss as
		// that row's ERROR: the row's alert accounts for the copy too.
		if st, ok := inboxState[p.MessageID]; ok && has(st, names...) {
			continue
		}
		wrongKind("parked", p.MessageID, names...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

package checker

import (
	"fmt"
	"slices"

	"github.com/outboxchaos/outboxchaos/history"
)

// lossAlerts are the alert kinds that tell an operator a message is lost
// for certain. The alerts of an unknown outcome (VENDOR_UNKNOWN,
// SENDING_TIMEOUT, RESULT_WRITE_FAILED, RECONCILE_STUCK) may name a
// message that arrived: the design says so, and the reconciler settles
// them.
var lossAlerts = []string{history.AlertExpired, history.AlertRelayFailed, history.AlertParked, history.AlertReconciledFailed, history.AlertAnniversaryLost}

// trueAlerts: an alert that reports a loss tells the truth: the message
// it names never reached a phone. A false alarm is a violation like a
// silent loss: an operator woken for messages that arrived stops trusting
// alerts. A parked message the harness replayed from the parking queue
// (an operator's act) may arrive after its PARKED alert.
var trueAlerts = Invariant{
	Name:  "true-alerts",
	Doc:   "no loss alert (EXPIRED, RELAY_FAILED, PARKED, RECONCILED_FAILED, ANNIVERSARY_LOST) names a message that reached a phone",
	Needs: needsHarness,
	Check: func(in Input) []string {
		replayed := map[string]bool{}
		for _, f := range in.Faults {
			if f.Kind == "replay-parked" && f.Fired {
				replayed[f.Target] = true
			}
		}
		var out []string
		for _, a := range in.State.Alerts {
			if !slices.Contains(lossAlerts, a.Kind) {
				continue
			}
			row, ok := alertRow(in.Tally, a)
			if !ok || in.Tally.Reached[row.DedupKey] == 0 || (a.Kind == history.AlertParked && replayed[MessageID(row.ID)]) {
				continue
			}
			out = append(out, fmt.Sprintf("false alarm: %s alert for %s (%s), which reached a phone", a.Kind, MessageID(row.ID), row.DedupKey))
		}
		return out
	},
}

// alertRow returns the outbox row an alert names, by outbox id, message
// id or dedup key.
func alertRow(t Tally, a AlertRecord) (OutboxRow, bool) {
	if a.MessageID != "" {
		if r, ok := t.ByMID[a.MessageID]; ok {
			return r, true
		}
	}
	if a.OutboxID != 0 {
		if r, ok := t.ByMID[MessageID(a.OutboxID)]; ok {
			return r, true
		}
	}
	if a.DedupKey != "" {
		for _, r := range t.ByMID {
			if r.DedupKey == a.DedupKey {
				return r, true
			}
		}
	}
	return OutboxRow{}, false
}

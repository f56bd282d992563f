// Package checker judges one recorded run of the pipeline: its final state
// (outbox and inbox rows, the handset ledger, alerts, queues) and its
// history (the pods' events and the faults injected). It is pure by
// construction: it imports nothing that talks to a database, a broker or
// the network, so a verdict can always be recomputed from a saved run
// (testdata/runs/*/run.json), as porcupine checks a saved history.
//
// The contract is a registry of named invariants (Invariants, one file
// each: inv_*.go, alerts.go, backoff.go, republish.go), composed by Judge
// into one Verdict that lists each invariant's result. The history is
// read by the constants of package history, never by a message's text.
package checker

import (
	"fmt"
	"time"

	"github.com/outboxchaos/outboxchaos/auditor"
	"github.com/outboxchaos/outboxchaos/history"
)

// State is the final state of one run, as plain data: what the checker
// reads besides the history. It is JSON-serialisable so checker tests keep
// hand-written states in testdata/.
type State struct {
	Intents    []string       `json:"intents"` // dedup keys the business rows call for
	Outbox     []OutboxRow    `json:"outbox"`
	Inbox      []InboxRow     `json:"inbox"`
	Ledger     []HandsetEntry `json:"ledger"`
	Alerts     []AlertRecord  `json:"alerts"`
	Parked     []ParkedRecord `json:"parked"`
	Queues     QueueDepths    `json:"queues"`
	Registered []string       `json:"registered"` // phones allowed outside production
	Production bool           `json:"production"`
	// Consent is the business tables' ground truth at the end of the run:
	// member id → has SMS consent and is active (a member missing from it
	// does not exist). A skip is intended only when it says so, or the
	// number is unregistered outside production; nil: not recorded, skips
	// are taken on trust.
	Consent map[int64]bool `json:"consent,omitempty"`
	// Backoff is the relay's backoff setting: the wait after the n-th
	// failed publish of a row is Backoff[n-1], the last step repeating
	// (empty: not recorded, not checked).
	Backoff []time.Duration `json:"backoff,omitempty"`
	// AlertAttempt is the relay's alert-attempt setting: the failed
	// publish that must raise a RELAY_ATTEMPTS alert (0: not recorded, the
	// rule is not checked).
	AlertAttempt int `json:"alert_attempt,omitempty"`
	// WorkerSkips are message_ids the worker skipped on purpose (consent
	// withdrawn, unregistered number) without an inbox row.
	WorkerSkips []string `json:"worker_skips,omitempty"`
	// VendorCalls are the send requests the vendor received, in order,
	// whatever their outcome.
	VendorCalls []VendorCall `json:"vendor_calls,omitempty"`
	// VendorHeld counts send requests the vendor still holds, to land
	// later (mode land-late): the run is not quiescent while one is held.
	VendorHeld int `json:"vendor_held,omitempty"`
	// WorkerHeld counts deliveries the running workers hold, neither
	// acked nor handed back yet. The broker counts such a copy unacked,
	// not ready, so the queues' depths do not show it: the run is not
	// quiescent while a worker holds one (it may be parking it).
	WorkerHeld int `json:"worker_held,omitempty"`
	// Settled is false when the run hit its deadline before quiescence.
	Settled bool `json:"settled"`
	// Harness is the harness's own record of what it seeded and did: the
	// ground truth the auditor invariants judge by. Intents are then the
	// auditor's, not the business tables'. Nil: not recorded (a run
	// recorded before it was, or one whose rows the harness did not seed):
	// those invariants say they could not judge.
	Harness *auditor.Record `json:"harness,omitempty"`
}

// VendorCall is one send request the vendor received.
type VendorCall struct {
	RefKey string `json:"refkey"`
	Mode   string `json:"mode"` // the fault mode applied ("accept" when none)
}

// OutboxRow is one notification_outbox row.
type OutboxRow struct {
	ID       int64  `json:"id"`
	DedupKey string `json:"dedup_key"`
	Kind     string `json:"kind"`
	Status   string `json:"status"`
	Reason   string `json:"reason,omitempty"`
	Attempts int    `json:"attempts,omitempty"`
	// Deferred: PENDING but due only after the run (ad cut-off).
	Deferred bool `json:"deferred,omitempty"`
	// Due is the row's next_attempt_at at the end of the run: with ID,
	// the order the relay claims due rows in (zero: not recorded).
	Due time.Time `json:"due,omitzero"`
	// MemberID and Phone are whom the payload addresses: with
	// State.Consent they tell whether a skip was owed.
	MemberID int64  `json:"member_id,omitempty"`
	Phone    string `json:"phone,omitempty"`
}

// InboxRow is one notification_histories row.
type InboxRow struct {
	MessageID string `json:"message_id"`
	OutboxID  int64  `json:"outbox_id"`
	DedupKey  string `json:"dedup_key"`
	Status    string `json:"status"`
	// Settled is how the reconciler settled the row (RECONCILED_SENT,
	// RECONCILED_FAILED, RESENT; "" if it did not); Resends counts its
	// re-sends.
	Settled string `json:"settled,omitempty"`
	Resends int    `json:"resends,omitempty"`
	// Reconcilable: an unsettled ERROR row a running reconciler will still
	// look up (the run is not quiescent while one is left).
	Reconcilable bool `json:"reconcilable,omitempty"`
}

// HandsetEntry is one message that reached a handset.
type HandsetEntry struct {
	RefKey string `json:"refkey"`
	Phone  string `json:"phone"`
	// At is when it reached the phone, on the run's clock (the vendor's);
	// zero: not recorded.
	At time.Time `json:"at,omitzero"`
}

// AlertRecord is one alert received by the sink.
type AlertRecord struct {
	Kind      string `json:"kind"`
	OutboxID  int64  `json:"outbox_id,omitempty"`
	MessageID string `json:"message_id,omitempty"`
	DedupKey  string `json:"dedup_key,omitempty"`
	Reason    string `json:"reason,omitempty"`
}

// ParkedRecord is one message left in the parking queue.
type ParkedRecord struct {
	MessageID string `json:"message_id"`
	Reason    string `json:"reason"`
	// OutboxID is the outbox row the copy's body names (0: unknown). A
	// relay that publishes a row under another message_id than
	// notification-outbox-{id} has its copies parked by the worker
	// (MESSAGE_ID_MISMATCH); they still account for that row.
	OutboxID int64 `json:"outbox_id,omitempty"`
}

// Row is the message_id of the outbox row the parked copy stands for: the
// row its body names, else its own message_id.
func (p ParkedRecord) Row() string {
	if p.OutboxID != 0 {
		return MessageID(p.OutboxID)
	}
	return p.MessageID
}

// QueueDepths are the ready counts at the end.
type QueueDepths struct {
	Main    int `json:"main"`
	Retry   int `json:"retry"`
	Parking int `json:"parking"`
}

// MessageID is the message_id of outbox row id: notification-outbox-{id}.
func MessageID(outboxID int64) string { return fmt.Sprintf("notification-outbox-%d", outboxID) }

// Quiescent reports whether a state has settled: no row PENDING (unless
// deferred) or PUBLISHING, no inbox row SENDING or RESENDING or still to
// be reconciled, no request held by the vendor, no delivery held by a
// worker, main and retry queues empty, and every PUBLISHED row accounted for by an inbox row, a parked
// copy or a worker skip.
func Quiescent(s State) bool {
	if s.Queues.Main > 0 || s.Queues.Retry > 0 || s.VendorHeld > 0 || s.WorkerHeld > 0 {
		return false
	}
	in := map[string]string{}
	for _, r := range s.Inbox {
		if r.Status == history.InboxSending || r.Status == history.InboxResending || r.Reconcilable {
			return false
		}
		in[r.MessageID] = r.Status
	}
	accounted := map[string]bool{}
	for _, p := range s.Parked {
		accounted[p.MessageID] = true
		accounted[p.Row()] = true
	}
	for _, m := range s.WorkerSkips {
		accounted[m] = true
	}
	for _, r := range s.Outbox {
		switch r.Status {
		case history.OutboxPublishing:
			return false
		case history.OutboxPending:
			if !r.Deferred {
				return false
			}
		case history.OutboxPublished:
			mid := MessageID(r.ID)
			if in[mid] == "" && !accounted[mid] {
				return false
			}
		}
	}
	return true
}

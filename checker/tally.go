package checker

import (
	"fmt"
	"iter"
	"sort"

	"github.com/outboxchaos/outboxchaos/history"
)

// Fate is what became of one intent by the end of a run. Every intent has
// exactly one; the invariants say which fates break the contract.
type Fate string

// The fates of an intent.
const (
	FateOnce         Fate = "delivered once"
	FateDuplicated   Fate = "duplicated"
	FateLostSilently Fate = "lost silently"
	FateLostVisibly  Fate = "lost visibly"
	FateSkipped      Fate = "skipped"  // not sent on purpose, and rightly so
	FateDeferred     Fate = "deferred" // an ad postponed past the run by the cut-off
	FateStuck        Fate = "stuck"
)

// IntentFate is one intent and its fate: its outbox row and inbox row (if
// any), how often it reached a handset, and the detail that explains a
// fate other than delivered once.
type IntentFate struct {
	Key      string
	Row      OutboxRow // zero if never enqueued
	Enqueued bool
	Inbox    InboxRow // zero if no worker claimed it
	HasInbox bool
	Handset  int
	Fate     Fate
	Detail   string
}

// Tally is the accounting of a final state, computed once per verdict and
// read by the invariants: every intent's fate, and the index the fates
// were found with.
type Tally struct {
	Intents []IntentFate
	// ByMID maps a message_id to its outbox row; it also holds a worker's
	// other message_id format for a row whose dedup key it claimed.
	ByMID      map[string]OutboxRow
	Registered map[string]bool
	// Reached counts, per dedup key, the handset deliveries its outbox
	// row owns.
	Reached map[string]int
	// Audit is the auditor's expectation matched to the outbox (nil: the
	// run has no harness record).
	Audit *Audit
}

// NewTally accounts for every intent of s: the notifications the auditor
// expects from the harness's record (without one, the dedup keys the
// business rows call for, as recorded), plus every outbox row enqueued
// without a known intent (still owed).
func NewTally(s State) Tally {
	t := Tally{ByMID: map[string]OutboxRow{}, Registered: map[string]bool{}, Reached: map[string]int{}, Audit: NewAudit(s)}
	if t.Audit != nil {
		s.Intents = t.Audit.Intents()
	}
	byKey := map[string]OutboxRow{}
	for _, r := range s.Outbox {
		byKey[r.DedupKey] = r
		t.ByMID[MessageID(r.ID)] = r
	}
	inbox := map[string]InboxRow{}
	for _, r := range s.Inbox {
		inbox[r.MessageID] = r
		// A refkey the worker claimed under another message_id format
		// still belongs to its outbox row: duplicates are counted by
		// dedup_key too.
		if _, ok := t.ByMID[r.MessageID]; !ok {
			if row, ok := byKey[r.DedupKey]; ok && r.DedupKey != "" {
				t.ByMID[r.MessageID] = row
			}
		}
	}
	for _, p := range s.Registered {
		t.Registered[p] = true
	}
	handset := map[string]int{}
	for _, e := range s.Ledger {
		handset[e.RefKey]++
	}
	for _, row := range t.Owned(s.Ledger) {
		t.Reached[row.DedupKey]++
	}
	alerted := alerts(s.Alerts)
	workerSkip := map[string]bool{}
	for _, m := range s.WorkerSkips {
		workerSkip[m] = true
	}
	parked := map[string]string{}
	for _, p := range s.Parked {
		parked[p.MessageID] = p.Reason
		if row := p.Row(); row != p.MessageID && parked[row] == "" {
			// Published under another message_id: the row's loss is
			// told by the parked copy, under the id it carried.
			parked[row] = p.Reason + ", published as " + p.MessageID
		}
	}

	intents := append([]string(nil), s.Intents...)
	seen := map[string]bool{}
	for _, k := range intents {
		seen[k] = true
	}
	for _, r := range s.Outbox {
		if !seen[r.DedupKey] {
			intents = append(intents, r.DedupKey)
			seen[r.DedupKey] = true
		}
	}
	sort.Strings(intents)
	for _, key := range intents {
		f := IntentFate{Key: key}
		f.Row, f.Enqueued = byKey[key]
		if !f.Enqueued {
			if alerted.key(key) {
				f.Fate, f.Detail = FateLostVisibly, fmt.Sprintf("lost visibly: %s never enqueued, alerted", key)
			} else {
				f.Fate, f.Detail = FateLostSilently, fmt.Sprintf("lost silently: %s never enqueued and no alert", key)
			}
			t.Intents = append(t.Intents, f)
			continue
		}
		mid := MessageID(f.Row.ID)
		f.Handset = max(handset[mid], t.Reached[key])
		f.Inbox, f.HasInbox = inbox[mid]
		f.Fate, f.Detail = fate(s, t, f, alerted, workerSkip, parked)
		t.Intents = append(t.Intents, f)
	}
	return t
}

// Owned yields each handset delivery of ledger that an outbox row owns,
// with that row; a delivery no row owns is nothing-unexpected's.
func (t Tally) Owned(ledger []HandsetEntry) iter.Seq2[HandsetEntry, OutboxRow] {
	return func(yield func(HandsetEntry, OutboxRow) bool) {
		for _, e := range ledger {
			if row, ok := t.ByMID[e.RefKey]; ok && !yield(e, row) {
				return
			}
		}
	}
}

// fate decides the fate of an enqueued intent.
func fate(s State, t Tally, f IntentFate, alerted alerts, workerSkip map[string]bool, parked map[string]string) (Fate, string) {
	row, ib, mid := f.Row, f.Inbox, MessageID(f.Row.ID)
	// lost is a row that never reached the handset, in state what:
	// visibly if an alert names it, silently if none does.
	lost := func(what string) (Fate, string) {
		if alerted.row(row) {
			return FateLostVisibly, fmt.Sprintf("lost visibly: %s %s with alert", mid, what)
		}
		return FateLostSilently, fmt.Sprintf("lost silently: %s %s without an alert", mid, what)
	}
	switch {
	case f.Handset > 1:
		return FateDuplicated, fmt.Sprintf("duplicated: %s (%s) reached the handset %d times", f.Key, mid, f.Handset)
	case f.Handset == 1:
		return FateOnce, ""
	}
	// Not delivered: it must be visibly lost, skipped on purpose, or
	// (before quiescence) stuck.
	_, isParked := parked[mid]
	switch {
	case row.Status == history.OutboxSkipped || (!f.HasInbox && workerSkip[mid]):
		if why := unowedSkip(s, row, t.Registered); why != "" {
			return FateLostSilently, fmt.Sprintf("lost silently: %s skipped, but %s", mid, why)
		}
		return FateSkipped, ""
	case row.Status == history.OutboxExpired || row.Status == history.OutboxFailed:
		return lost(row.Status)
	case row.Status == history.OutboxPending && row.Deferred:
		return FateDeferred, fmt.Sprintf("deferred: %s due after the run", mid)
	case row.Status == history.OutboxPending || row.Status == history.OutboxPublishing:
		return FateStuck, fmt.Sprintf("stuck: %s outbox %s", mid, row.Status)
	case f.HasInbox && (ib.Status == history.InboxSending || ib.Status == history.InboxResending):
		return FateStuck, fmt.Sprintf("stuck: %s inbox %s", mid, ib.Status)
	case f.HasInbox && (ib.Status == history.InboxError || ib.Status == history.InboxFailed):
		return lost("inbox " + ib.Status)
	case f.HasInbox && ib.Status == history.InboxSent:
		return FateLostSilently, fmt.Sprintf("lost silently: %s inbox SENT but the handset never got it", mid)
	case isParked:
		return lost("parked (" + parked[mid] + ")")
	case s.Queues.Main > 0 || s.Queues.Retry > 0:
		return FateStuck, fmt.Sprintf("stuck: %s still queued", mid)
	}
	return FateLostSilently, fmt.Sprintf("lost silently: %s published, never sent, no inbox row, not parked", mid)
}

// With returns the details of the intents whose fate is f, in key order.
func (t Tally) With(f Fate) []string {
	var out []string
	for _, i := range t.Intents {
		if i.Fate == f {
			out = append(out, i.Detail)
		}
	}
	return out
}

// count returns how many intents have fate f.
func (t Tally) count(f Fate) int {
	n := 0
	for _, i := range t.Intents {
		if i.Fate == f {
			n++
		}
	}
	return n
}

// observe fills the verdict's observations: how many intents met each
// harmless fate, how the reconciler settled rows, and the notes on
// visible losses and deferrals. The invariants fill the rest.
func (t Tally) observe(v *Verdict) {
	v.Intents = len(t.Intents)
	v.DeliveredOnce = t.count(FateOnce)
	v.LostVisibly = t.count(FateLostVisibly)
	v.Skipped = t.count(FateSkipped)
	v.Deferred = t.count(FateDeferred)
	for _, i := range t.Intents {
		if i.Fate == FateLostVisibly || i.Fate == FateDeferred {
			v.Details = append(v.Details, i.Detail)
		}
		if i.Fate == FateOnce && i.HasInbox && i.Inbox.Status == history.InboxError {
			v.ErrorDelivered++
		}
		// An ERROR row nobody settled, told to an operator (its outbox row
		// neither EXPIRED nor FAILED: those are lost by the relay).
		if i.Fate == FateLostVisibly && i.HasInbox && i.Inbox.Status == history.InboxError && i.Inbox.Settled == "" &&
			i.Row.Status != history.OutboxExpired && i.Row.Status != history.OutboxFailed {
			v.Unknown++
		}
		if !i.Enqueued {
			continue
		}
		switch i.Inbox.Settled {
		case history.SettledSent:
			v.ReconciledSent++
		case history.SettledFailed:
			v.ReconciledFailed++
		}
		if i.Inbox.Resends > 0 {
			v.Resent++
		}
	}
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

// alerts are the alerts received, asked what they name.
type alerts []AlertRecord

// row reports whether an alert names r by outbox id, message_id or key.
func (as alerts) row(r OutboxRow) bool {
	mid := MessageID(r.ID)
	for _, a := range as {
		if (a.OutboxID != 0 && a.OutboxID == r.ID) || (a.MessageID != "" && a.MessageID == mid) || (a.DedupKey != "" && a.DedupKey == r.DedupKey) {
			return true
		}
	}
	return false
}

// key reports whether an alert names the dedup key.
func (as alerts) key(k string) bool {
	for _, a := range as {
		if a.DedupKey == k {
			return true
		}
	}
	return false
}

package audit

import (
	"fmt"
	"time"

	"github.com/outboxchaos/outboxchaos/checker"
	"github.com/outboxchaos/outboxchaos/history"
)

// Snapshot is the audited data as the checker reads it (State), with the
// messages still in flight set aside and the indexes the report shows
// each violating message's rows and report lines by.
type Snapshot struct {
	// State is what the checker's invariants judge: the outbox and inbox
	// rows, the report's deliveries as the handset ledger, the alerts,
	// the parked messages the PARKED alerts name. A message in flight is
	// presented as an outbox row due later (deferred), so that it is not
	// judged stuck or lost before its deadline.
	State checker.State
	// InFlight maps the message_id of each message in flight to why.
	InFlight map[string]string
	// Unsettled lists the inbox ERROR rows the grace has passed for that
	// nobody settled (the errors-settled invariant).
	Unsettled []string

	// The indexes hold positions in data's slices: a month's chunk is
	// indexed without a second copy of its rows.
	data     Data
	outbox   map[int64]int    // outbox id → data.Outbox
	inbox    map[string][]int // message_id → data.Inbox
	byOutbox map[int64][]int  // outbox id → data.Inbox
	lines    map[string][]int // the message_id each line counts for → data.Report
}

// Build turns the audited data into the checker's State (see Snapshot).
// The report's SENT lines play the handset ledger: a line whose refkey
// names no row but whose dedup key names an outbox row counts for that
// row. A member the members table holds without consent (or inactive)
// accounts for a published message never sent: the worker skips it
// without a row.
func Build(d Data, set Settings) Snapshot {
	sn := Snapshot{data: d, InFlight: map[string]string{}, outbox: make(map[int64]int, len(d.Outbox)), inbox: make(map[string][]int, len(d.Inbox)),
		byOutbox: make(map[int64][]int, len(d.Inbox)), lines: make(map[string][]int, len(d.Report))}
	s := &sn.State
	s.Production, s.Settled, s.Consent, s.AlertAttempt = true, true, d.Consent, set.AlertAttempt
	s.Outbox, s.Inbox, s.Ledger = make([]checker.OutboxRow, 0, len(d.Outbox)), make([]checker.InboxRow, 0, len(d.Inbox)), make([]checker.HandsetEntry, 0, len(d.Report))
	byKey := make(map[string]int64, len(d.Outbox))
	for i, r := range d.Outbox {
		sn.outbox[r.ID] = i
		byKey[r.DedupKey] = r.ID
	}
	for i, r := range d.Inbox {
		sn.inbox[r.MessageID] = append(sn.inbox[r.MessageID], i)
		if r.OutboxID != 0 {
			sn.byOutbox[r.OutboxID] = append(sn.byOutbox[r.OutboxID], i)
		}
		s.Inbox = append(s.Inbox, checker.InboxRow{MessageID: r.MessageID, OutboxID: r.OutboxID, DedupKey: r.DedupKey,
			Status: r.Status, Settled: r.Settled, Resends: r.Resends})
	}
	sent := make(map[string]int, len(d.Report))
	for i, l := range d.Report {
		mid := l.RefKey
		if _, known := sn.inbox[mid]; !known && !isOutboxMID(sn.outbox, mid) && l.DedupKey != "" {
			if id, ok := byKey[l.DedupKey]; ok {
				mid = checker.MessageID(id)
			}
		}
		sn.lines[mid] = append(sn.lines[mid], i)
		if l.Status == ReportSent {
			sent[mid]++
			s.Ledger = append(s.Ledger, checker.HandsetEntry{RefKey: mid, Phone: l.Phone, At: l.At})
		}
	}
	for _, a := range d.Alerts {
		s.Alerts = append(s.Alerts, a)
		if a.Kind != history.AlertParked {
			continue
		}
		mid := a.MessageID
		if mid == "" && a.OutboxID != 0 {
			mid = checker.MessageID(a.OutboxID)
		}
		if mid != "" {
			s.Parked = append(s.Parked, checker.ParkedRecord{MessageID: mid, Reason: a.Reason, OutboxID: a.OutboxID})
		}
	}
	for _, r := range d.Outbox {
		mid := r.MessageID()
		row := checker.OutboxRow{ID: r.ID, DedupKey: r.DedupKey, Kind: r.Kind, Status: r.Status, Reason: r.Reason,
			Attempts: r.Attempts, Deferred: r.Deferred, Due: r.NextAttemptAt, MemberID: r.MemberID, Phone: r.Phone}
		if sent[mid] == 0 {
			if why := sn.inFlight(r, set); why != "" {
				sn.InFlight[mid] = why
				row.Status, row.Deferred = history.OutboxPending, true
			}
			if ok, found := d.Consent[r.MemberID]; found && !ok && r.Status == history.OutboxPublished && len(sn.inbox[mid]) == 0 {
				s.WorkerSkips = append(s.WorkerSkips, mid)
			}
		}
		s.Outbox = append(s.Outbox, row)
	}
	for _, r := range d.Inbox {
		if r.Status == history.InboxError && r.Settled == "" && (d.Now.IsZero() || !r.UpdatedAt.Add(set.Grace).After(d.Now)) {
			sn.Unsettled = append(sn.Unsettled, fmt.Sprintf("stuck: %s inbox ERROR since %s, never settled (the report has %d delivery lines for it)",
				r.MessageID, stamp(r.UpdatedAt), sent[r.MessageID]))
		}
	}
	return sn
}

// isOutboxMID reports whether mid is the message_id of an audited outbox
// row.
func isOutboxMID(outbox map[int64]int, mid string) bool {
	id := outboxIDOf(mid)
	_, ok := outbox[id]
	return id != 0 && ok
}

// inFlight says why an undelivered message is still within its
// deadlines at the snapshot ("" if it is not): a row PENDING (a relay
// run owes it), PUBLISHING within its lease, claimed by a worker
// (SENDING) within the sending timeout, published less than the grace
// ago with no worker's row yet, or SENT less than the grace ago (the
// report may not list it yet). At the end of a recorded run (no
// snapshot time) only a row the run found deferred is.
func (sn Snapshot) inFlight(r OutboxRecord, set Settings) string {
	now := sn.data.Now
	if r.Deferred {
		return "due later (deferred)"
	}
	if now.IsZero() {
		return ""
	}
	within := func(t time.Time, d time.Duration) bool { return !t.IsZero() && t.Add(d).After(now) }
	switch r.Status {
	case history.OutboxPending:
		return fmt.Sprintf("PENDING, next attempt at %s", stamp(r.NextAttemptAt))
	case history.OutboxPublishing:
		if within(r.ClaimedUntil, 0) {
			return fmt.Sprintf("PUBLISHING within its lease (until %s)", stamp(r.ClaimedUntil))
		}
		return ""
	case history.OutboxPublished:
	default:
		return ""
	}
	rows := sn.inbox[r.MessageID()]
	if len(rows) == 0 {
		if within(latest(r.PublishedAt, r.UpdatedAt), set.Grace) {
			return fmt.Sprintf("published at %s, less than %s ago: may still be queued", stamp(latest(r.PublishedAt, r.UpdatedAt)), set.Grace)
		}
		return ""
	}
	ib := sn.data.Inbox[rows[len(rows)-1]]
	switch {
	case (ib.Status == history.InboxSending || ib.Status == history.InboxResending) && within(ib.CreatedAt, set.SendingTimeout):
		return fmt.Sprintf("inbox %s since %s, within the sending timeout (%s)", ib.Status, stamp(ib.CreatedAt), set.SendingTimeout)
	case ib.Status == history.InboxSent && within(ib.UpdatedAt, set.Grace):
		return fmt.Sprintf("inbox SENT at %s, less than %s ago: the report may not list it yet", stamp(ib.UpdatedAt), set.Grace)
	}
	return ""
}

// latest returns the later of two times.
func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// stamp formats a time for the report ("-" when zero).
func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

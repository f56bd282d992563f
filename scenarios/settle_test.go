package scenarios

import (
	"fmt"
	"testing"

	"pgregory.net/rapid"

	"github.com/outboxchaos/outboxchaos/checker"
)

// settleView is what settleLook reads of a whole snapshot s: the rows'
// ids, statuses, deferrals and reconcilability, the queues' depths, the
// vendor's held requests and the workers' skips, and the parked copies
// only when the rest is not quiescent and the parking queue holds any.
func settleView(s checker.State) checker.State {
	var v checker.State
	for _, r := range s.Outbox {
		v.Outbox = append(v.Outbox, checker.OutboxRow{ID: r.ID, Status: r.Status, Due: r.Due, Deferred: r.Deferred})
	}
	for _, r := range s.Inbox {
		v.Inbox = append(v.Inbox, checker.InboxRow{MessageID: r.MessageID, Status: r.Status, Settled: r.Settled, Reconcilable: r.Reconcilable})
	}
	v.Queues, v.VendorHeld, v.WorkerSkips = s.Queues, s.VendorHeld, s.WorkerSkips
	if !checker.Quiescent(v) && v.Queues.Parking > 0 {
		v.Parked = s.Parked
	}
	return v
}

// The settle's light look decides quiescence as a whole snapshot would:
// on any state, Quiescent answers the same on what settleLook reads. It
// fails if Quiescent comes to read a field the look leaves out, or if the
// look's rule for reading parked copies stops being safe.
func TestSettleLookDecidesAsSnapshot(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		var s checker.State
		n := rapid.IntRange(0, 6).Draw(t, "rows")
		mid := func(i int) string { return checker.MessageID(int64(i)) }
		// Mostly settled, so that the cases where one field decides come
		// up: a busy value one draw in four.
		busy := func(label string) bool { return rapid.IntRange(0, 3).Draw(t, label) == 0 }
		for i := 1; i <= n; i++ {
			s.Outbox = append(s.Outbox, checker.OutboxRow{ID: int64(i), DedupKey: fmt.Sprintf("k%d", i), Kind: "K",
				Status:   rapid.SampledFrom([]string{"PUBLISHED", "PUBLISHED", "PENDING", "PUBLISHING", "SKIPPED", "FAILED", "EXPIRED"}).Draw(t, "outbox status"),
				Deferred: !busy("not deferred"), Attempts: rapid.IntRange(0, 3).Draw(t, "attempts"), MemberID: int64(i)})
			if busy("not in the inbox") {
				if rapid.Bool().Draw(t, "parked") {
					s.Parked = append(s.Parked, checker.ParkedRecord{MessageID: mid(i), Reason: "r"})
				}
			} else {
				s.Inbox = append(s.Inbox, checker.InboxRow{MessageID: mid(i), OutboxID: int64(i), DedupKey: fmt.Sprintf("k%d", i),
					Status:       rapid.SampledFrom([]string{"SENT", "SENT", "FAILED", "ERROR", "SENDING", "RESENDING"}).Draw(t, "inbox status"),
					Reconcilable: busy("reconcilable")})
			}
		}
		if busy("main") {
			s.Queues.Main = 1
		}
		if busy("retry") {
			s.Queues.Retry = 1
		}
		s.Queues.Parking = len(s.Parked) // a snapshot reads every parked copy
		if busy("held") {
			s.VendorHeld = 1
		}
		if n > 0 && rapid.Bool().Draw(t, "a skip") {
			s.WorkerSkips = []string{mid(rapid.IntRange(1, n).Draw(t, "skipped"))}
		}
		s.Registered = []string{"010"}
		s.Ledger = []checker.LedgerEntry{{RefKey: mid(1), Phone: "010"}}
		if whole, light := checker.Quiescent(s), checker.Quiescent(settleView(s)); whole != light {
			t.Fatalf("Quiescent: %v on the whole snapshot, %v on the settle's look\n%+v", whole, light, s)
		}
	})
}

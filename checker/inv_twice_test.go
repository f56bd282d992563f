package checker

import "testing"

// TestNothingTwice: a refkey on the handset twice, or the same dedup key
// under two message_id formats, is one duplicate.
func TestNothingTwice(t *testing.T) {
	t.Parallel()
	s := State{Intents: []string{"K:1"}, Outbox: []OutboxRow{{ID: 1, DedupKey: "K:1", Status: "PUBLISHED"}},
		Inbox:  []InboxRow{{MessageID: "notification-outbox-1", DedupKey: "K:1", Status: "SENT"}, {MessageID: "other-1", DedupKey: "K:1", Status: "SENT"}},
		Ledger: []HandsetEntry{{RefKey: "notification-outbox-1"}}, Production: true, Settled: true}
	if d := nothingTwice.Check(Input{State: s, Tally: NewTally(s)}); len(d) != 0 {
		t.Fatalf("once: %q", d)
	}
	s.Ledger = append(s.Ledger, HandsetEntry{RefKey: "other-1"})
	if d := nothingTwice.Check(Input{State: s, Tally: NewTally(s)}); len(d) != 1 {
		t.Fatalf("twice under two formats: %q", d)
	}
}

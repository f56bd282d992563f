package checker

import "testing"

// TestNothingUnexpected: a handset message no row owns, and one to an
// unregistered number outside production, are unexpected; in production
// any number may receive.
func TestNothingUnexpected(t *testing.T) {
	t.Parallel()
	s := State{Outbox: []OutboxRow{{ID: 1, DedupKey: "K:1", Status: "PUBLISHED"}},
		Ledger: []HandsetEntry{{RefKey: "notification-outbox-1", Phone: "01099999999"}, {RefKey: "notification-outbox-9"}}}
	if d := nothingUnexpected.Check(Input{State: s, Tally: NewTally(s)}); len(d) != 2 {
		t.Fatalf("want two: %q", d)
	}
	s.Production = true
	if d := nothingUnexpected.Check(Input{State: s, Tally: NewTally(s)}); len(d) != 1 {
		t.Fatalf("in production, only the unowned one: %q", d)
	}
}

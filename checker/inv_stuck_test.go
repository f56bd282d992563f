package checker

import "testing"

// TestNothingStuck: a row PUBLISHING at the end is stuck; a deferred ad
// is not.
func TestNothingStuck(t *testing.T) {
	t.Parallel()
	s := State{Outbox: []OutboxRow{{ID: 1, DedupKey: "K:1", Status: "PUBLISHING"}, {ID: 2, DedupKey: "K:2", Status: "PENDING", Deferred: true}}, Settled: true}
	if d := nothingStuck.Check(Input{State: s, Tally: NewTally(s)}); len(d) != 1 {
		t.Fatalf("want one stuck row: %q", d)
	}
}

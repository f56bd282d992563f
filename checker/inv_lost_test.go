package checker

import "testing"

// TestNothingLostSilently: an intent never delivered is a silent loss
// unless an alert names it.
func TestNothingLostSilently(t *testing.T) {
	t.Parallel()
	s := State{Intents: []string{"K:1"}, Outbox: []OutboxRow{{ID: 1, DedupKey: "K:1", Status: "EXPIRED"}}, Settled: true}
	if d := nothingLostSilently.Check(Input{State: s, Tally: NewTally(s)}); len(d) != 1 {
		t.Fatalf("no alert: %q", d)
	}
	s.Alerts = []AlertRecord{{Kind: AlertExpired, OutboxID: 1}}
	if d := nothingLostSilently.Check(Input{State: s, Tally: NewTally(s)}); len(d) != 0 {
		t.Fatalf("with its alert: %q", d)
	}
}

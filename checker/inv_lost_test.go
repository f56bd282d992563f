package checker

import (
	"strings"
	"testing"

	"github.com/outboxchaos/outboxchaos/history"
)

// TestNothingLostSilently: an intent never delivered is a silent loss
// unless an alert names it.
func TestNothingLostSilently(t *testing.T) {
	t.Parallel()
	s := State{Intents: []string{"K:1"}, Outbox: []OutboxRow{{ID: 1, DedupKey: "K:1", Status: "EXPIRED"}}, Settled: true}
	if d := nothingLostSilently.Check(Input{State: s, Tally: NewTally(s)}); len(d) != 1 {
		t.Fatalf("no alert: %q", d)
	}
	s.Alerts = []AlertRecord{{Kind: history.AlertExpired, OutboxID: 1}}
	if d := nothingLostSilently.Check(Input{State: s, Tally: NewTally(s)}); len(d) != 0 {
		t.Fatalf("with its alert: %q", d)
	}
}

// TestParkedUnderAnotherID: a relay that published a row under another
// message_id than the row's has its copy parked by the worker
// (MESSAGE_ID_MISMATCH), with a PARKED alert naming the row: the run
// settles, and the row is lost visibly — never "lost silently, not
// parked".
func TestParkedUnderAnotherID(t *testing.T) {
	t.Parallel()
	s := State{Intents: []string{"K:1"}, Outbox: []OutboxRow{{ID: 1, DedupKey: "K:1", Status: "PUBLISHED"}}, Settled: true,
		Parked: []ParkedRecord{{MessageID: "b7e1c0de", Reason: "MESSAGE_ID_MISMATCH", OutboxID: 1}},
		Alerts: []AlertRecord{{Kind: history.AlertParked, OutboxID: 1, MessageID: "b7e1c0de", Reason: "MESSAGE_ID_MISMATCH"}}}
	if !Quiescent(s) {
		t.Error("a row whose copy is parked under another id is accounted for: the state is quiescent")
	}
	tl := NewTally(s)
	if f := tl.Intents[0]; f.Fate != FateLostVisibly || !strings.Contains(f.Detail, "published as b7e1c0de") {
		t.Errorf("fate %s: %s", f.Fate, f.Detail)
	}
	if d := nothingLostSilently.Check(Input{State: s, Tally: tl}); len(d) != 0 {
		t.Errorf("lost silently: %q", d)
	}
	s.Parked[0].OutboxID = 0
	if Quiescent(s) {
		t.Error("a PUBLISHED row nothing accounts for: not quiescent")
	}
}

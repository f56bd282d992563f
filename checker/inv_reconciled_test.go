package checker

import (
	"testing"

	"github.com/outboxchaos/outboxchaos/history"
)

// TestSettlementsAgree: a row settled FAILED that reached the handset is
// misreconciled; one that did not is a visible loss.
func TestSettlementsAgree(t *testing.T) {
	t.Parallel()
	s := State{Intents: []string{"K:1"}, Outbox: []OutboxRow{{ID: 1, DedupKey: "K:1", Status: "PUBLISHED"}},
		Inbox:  []InboxRow{{MessageID: "notification-outbox-1", Status: "FAILED", Settled: history.SettledFailed}},
		Alerts: []AlertRecord{{Kind: history.AlertReconciledFailed, MessageID: "notification-outbox-1"}}, Production: true, Settled: true}
	if d := settlementsAgree.Check(Input{State: s, Tally: NewTally(s)}); len(d) != 0 {
		t.Fatalf("never delivered: %q", d)
	}
	s.Ledger = []HandsetEntry{{RefKey: "notification-outbox-1"}}
	if d := settlementsAgree.Check(Input{State: s, Tally: NewTally(s)}); len(d) != 1 {
		t.Fatalf("delivered yet settled FAILED: %q", d)
	}
}

package checker

import (
	"testing"

	"github.com/outboxchaos/outboxchaos/history"
)

// TestStatusesAgree: a message that reached a phone whose outbox row ends
// EXPIRED (no alert) breaks statuses-agree alone; an inbox FAILED the
// reconciler settled is settlements-agree's, not this one's.
func TestStatusesAgree(t *testing.T) {
	t.Parallel()
	s := auditState()
	s.Outbox[0].Status, s.Outbox[0].Reason = "EXPIRED", "SCHEDULED_DATE_PASSED"
	onlyBroken(t, Record{State: s}, "statuses-agree")

	s = auditState()
	s.Inbox[0].Status = "FAILED"
	onlyBroken(t, Record{State: s}, "statuses-agree")

	s.Inbox[0].Settled = history.SettledFailed
	s.Alerts = []AlertRecord{{Kind: history.AlertReconciledFailed, MessageID: MessageID(1)}}
	for _, name := range Check(s).Broken() {
		if name == "statuses-agree" {
			t.Errorf("a settlement the ledger contradicts is settlements-agree's")
		}
	}
}

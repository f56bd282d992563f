package checker

import (
	"testing"
	"time"

	"github.com/outboxchaos/outboxchaos/auditor"
	"github.com/outboxchaos/outboxchaos/history"
)

// TestRightPerson: a send whose copy reached the worker after the member
// withdrew breaks right-person alone; one whose copy was past its
// pre-check before the withdrawal holds.
func TestRightPerson(t *testing.T) {
	t.Parallel()
	h := []history.Event{
		ev(time.Second, "worker-1", history.Delivery, map[string]any{history.KeyMessageID: MessageID(1)}),
		ev(2*time.Second, "worker-1", history.VendorCall, map[string]any{history.KeyMessageID: MessageID(1)}),
	}
	withdrawn := func(at time.Duration) State {
		s := auditState()
		s.Harness.Withdrawals = []auditor.Withdrawal{{At: at, Member: 1}}
		return s
	}
	if v := Judge(h, nil, withdrawn(1500*time.Millisecond)); !v.OK() {
		t.Errorf("withdrawn after the copy's pre-check: %s %q", v, v.Details)
	}
	onlyBroken(t, Record{History: h, State: withdrawn(500 * time.Millisecond)}, "right-person")
	if v := Judge(nil, nil, withdrawn(0)); !v.OK() {
		t.Errorf("no worker history to place the pre-check: %s %q", v, v.Details)
	}
}

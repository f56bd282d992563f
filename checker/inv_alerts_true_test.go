package checker

import (
	"testing"

	"github.com/outboxchaos/outboxchaos/history"
)

// TestTrueAlerts: a loss alert for a message that reached a phone breaks
// true-alerts alone; an unknown-outcome alert does not; a PARKED alert
// for a message the harness replayed from parking does not.
func TestTrueAlerts(t *testing.T) {
	t.Parallel()
	s := auditState()
	s.Alerts = []AlertRecord{{Kind: history.AlertParked, MessageID: MessageID(1)}}
	onlyBroken(t, Record{State: s}, "true-alerts")

	s.Alerts = []AlertRecord{{Kind: history.AlertVendorUnknown, MessageID: MessageID(1)}}
	if v := Check(s); !v.OK() {
		t.Errorf("an unknown outcome's alert: %s %q", v, v.Details)
	}
	s.Alerts = []AlertRecord{{Kind: history.AlertParked, OutboxID: 1}}
	f := []FaultRecord{{Kind: "replay-parked", Target: MessageID(1), Fired: true}}
	if v := Judge(nil, f, s); !v.OK() {
		t.Errorf("replayed by the operator after its alert: %s %q", v, v.Details)
	}
	s.Alerts = []AlertRecord{{Kind: history.AlertExpired, DedupKey: "GRADE_RENEWAL:7001"}}
	if got := trueAlerts.Check(Input{State: s, Tally: NewTally(s)}); len(got) != 1 {
		t.Errorf("an alert naming the key: %q", got)
	}
}

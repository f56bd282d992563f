package checker

import (
	"testing"
	"time"

	"github.com/outboxchaos/outboxchaos/history"
)

// TestRightTime: an ad delivered inside the hours holds; one at 20:50 or
// published from a claim decided at 20:40 breaks right-time alone; a pod
// whose clock the harness moved is not judged on the run's clock.
func TestRightTime(t *testing.T) {
	t.Parallel()
	at := func(hh, mm int) time.Time { return time.Date(2026, 12, 5, hh, mm, 0, 0, auditDay.Location()) }
	if v := Check(adState(at(20, 49))); !v.OK() {
		t.Fatalf("an ad at 20:49: %s %q", v, v.Details)
	}
	onlyBroken(t, Record{State: adState(at(20, 50))}, "right-time")
	onlyBroken(t, Record{State: adState(at(7, 59))}, "right-time")

	claim := func(now time.Time) []history.Event {
		return []history.Event{
			ev(time.Second, "relay-1", history.Claim, map[string]any{history.KeyIDs: []any{1.0}, history.KeyNow: now.Format(time.RFC3339Nano)}),
			ev(2*time.Second, "relay-1", history.Publish, map[string]any{history.KeyOutboxID: 1.0, history.KeyOutcome: history.OutcomeConfirmed}),
		}
	}
	s := adState(at(20, 45))
	if v := Judge(claim(at(20, 39)), nil, s); !v.OK() {
		t.Errorf("decided at 20:39, sent at 20:45: %s %q", v, v.Details)
	}
	if v := Judge(claim(at(20, 40)), nil, s); len(v.Broken()) != 1 || v.Broken()[0] != "right-time" {
		t.Errorf("decided at 20:40: %s %q", v, v.Details)
	}
	s.Harness.Skewed = []string{"relay-1"}
	if v := Judge(claim(at(20, 40)), nil, s); !v.OK() {
		t.Errorf("a relay on a clock of its own: %s %q", v, v.Details)
	}
	s = adState(at(21, 0))
	s.Harness.Skewed = []string{"worker-1"}
	h := []history.Event{ev(time.Second, "worker-1", history.VendorCall, map[string]any{history.KeyMessageID: MessageID(1)})}
	if v := Judge(h, nil, s); !v.OK() {
		t.Errorf("a worker on a clock of its own: %s %q", v, v.Details)
	}
}

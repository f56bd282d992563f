package scenarios

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/outboxchaos/outboxchaos/checker"
	"github.com/outboxchaos/outboxchaos/history"
)

// TestCoverageCountsFiredEvidence: only fired faults count; a point fault
// reaches its point's phase, a vendor lookup mode the reconciler, a window
// the phases logged while it was in place; two faults in place at once make
// a pair, two apart do not.
func TestCoverageCountsFiredEvidence(t *testing.T) {
	t.Parallel()
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	recs := []checker.FaultRecord{
		{Kind: "kill-point", Fired: true, Start: 0, At: ms(5000), Detail: "kill-point worker.after-error-result:1: died"},
		{Kind: "down", Fired: true, Start: ms(100), At: ms(300), Detail: "down postgres: refused"},
		{Kind: "latency", Fired: false, Start: ms(100), At: ms(300), Detail: "latency vendor: nothing"},
		{Kind: "vendor", Fired: true, Start: 0, At: ms(5000), Detail: "vendor lookup-5xx for notification-outbox-1 ×1: answered"},
		{Kind: "stall", Fired: true, Start: ms(6000), At: ms(7000), Detail: "stall vendor: held"},
	}
	events := []history.Event{
		{At: ms(150), Pod: "relay-1", Name: history.Publish},
		{At: ms(200), Pod: "worker-2", Name: history.VendorCall},
		{At: ms(400), Pod: "relay-1", Name: history.Claim},
	}
	c := NewCoverage()
	c.Add(recs, events)
	for _, want := range []string{"kill-point@result", "down@publish", "down@send", "vendor@reconcile", "stall@idle"} {
		if c.Single[want] != 1 {
			t.Errorf("cell %s: %d, want 1 (%v)", want, c.Single[want], c.Single)
		}
	}
	for _, not := range []string{"down@claim", "latency@send", "vendor@send"} {
		if c.Single[not] != 0 {
			t.Errorf("cell %s reached", not)
		}
	}
	if c.Pairs["down@publish + kill-point@result"] != 1 || c.FamilyPairs["down + kill-point"] != 1 {
		t.Errorf("pairs %v", c.Pairs)
	}
	if c.FamilyPairs["down + stall"] != 0 {
		t.Errorf("faults apart paired: %v", c.FamilyPairs)
	}
	// A job's kill-point is over once the job last logged; one clock in
	// every relay is one fault, not a pair.
	c2 := NewCoverage()
	c2.Add([]checker.FaultRecord{
		{Kind: "kill-point", Fired: true, Start: 0, At: ms(5000), Detail: "kill-point job.before-commit:1: died"},
		{Kind: "down", Fired: true, Start: ms(100), At: ms(300), Detail: "down postgres: refused"},
		{Kind: "clock", Fired: true, Start: ms(60), At: ms(5000), Detail: "clock at +1d 10:00: relay-1"},
		{Kind: "clock", Fired: true, Start: ms(70), At: ms(5000), Detail: "clock at +1d 10:00: relay-2"},
	}, []history.Event{{At: ms(50), Pod: "job-1", Name: history.Job}, {At: ms(150), Pod: "relay-1", Name: history.Claim}})
	if len(c2.FamilyPairs) != 1 || c2.FamilyPairs["clock + down"] != 1 {
		t.Errorf("pairs %v, want only clock + down", c2.FamilyPairs)
	}
	var b bytes.Buffer
	c.WriteTable(&b)
	if !strings.Contains(b.String(), "single cells reached: 5") {
		t.Errorf("table:\n%s", b.String())
	}
}

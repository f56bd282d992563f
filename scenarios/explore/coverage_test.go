package explore

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/outboxchaos/outboxchaos/checker"
	"github.com/outboxchaos/outboxchaos/faults"
	"github.com/outboxchaos/outboxchaos/history"
)

// TestCoverageCountsFiredEvidence: only fired faults count; a point fault
// reaches its point's phase, a vendor lookup mode the reconciler, a window
// the phases logged while it was in place; two faults in place at once make
// a pair, two apart do not.
func TestCoverageCountsFiredEvidence(t *testing.T) {
	t.Parallel()
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	// Each record is the ledger's line for a real fault: where it reaches
	// is what the fault says of itself.
	rec := func(sp faults.Spec, fired bool, start, at int, evidence string) checker.FaultRecord {
		f, err := sp.Build()
		if err != nil {
			t.Fatal(err)
		}
		return faults.Record(f, fired, evidence, ms(start), ms(at))
	}
	recs := []checker.FaultRecord{
		rec(faults.Spec{Kind: "kill-point", Point: "worker.after-error-result", Hit: 1}, true, 0, 5000, "died"),
		rec(faults.Spec{Kind: "down", Link: "postgres"}, true, 100, 300, "refused"),
		rec(faults.Spec{Kind: "latency", Link: "vendor", Delay: faults.Duration(time.Second), Direction: "downstream"}, false, 100, 300, "nothing"),
		rec(faults.Spec{Kind: "vendor", Mode: "lookup-5xx", Msg: 1, Times: 1}, true, 0, 5000, "answered"),
		rec(faults.Spec{Kind: "stall", Link: "vendor", Direction: "downstream"}, true, 6000, 7000, "held"),
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
		rec(faults.Spec{Kind: "kill-point", Point: "job.before-commit", Hit: 1}, true, 0, 5000, "died"),
		rec(faults.Spec{Kind: "down", Link: "postgres"}, true, 100, 300, "refused"),
		rec(faults.Spec{Kind: "clock", At: "+1d 10:00"}, true, 60, 5000, "relay-1"),
		rec(faults.Spec{Kind: "clock", At: "+1d 10:00"}, true, 70, 5000, "relay-2"),
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

package checker

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/outboxchaos/outboxchaos/history"
)

// TestCheckRecordedStates runs the pure checker on hand-written final
// states with known verdicts (testdata/states/*.json): no services needed.
func TestCheckRecordedStates(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("testdata", "states", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no checker testdata: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			t.Parallel()
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var c struct {
				Comment string  `json:"comment"`
				State   State   `json:"state"`
				Want    Verdict `json:"want"`
			}
			dec := json.NewDecoder(bytesReader(raw))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&c); err != nil {
				t.Fatalf("decode %s: %v", f, err)
			}
			full := Check(c.State)
			got := full
			got.Details, got.Invariants = nil, nil
			if !reflect.DeepEqual(got, c.Want) {
				t.Errorf("%s\n got: %s (error_delivered=%d)\nwant: %s (error_delivered=%d)\ndetails: %v",
					c.Comment, got, got.ErrorDelivered, c.Want, c.Want.ErrorDelivered, Check(c.State).Details)
			}
			// The counts the case records and the invariants agree: the
			// verdict holds exactly when the recorded counts say it does.
			if full.OK() != c.Want.OK() {
				t.Errorf("OK() = %v (broken %v), the recorded counts say %v", full.OK(), full.Broken(), c.Want.OK())
			}
		})
	}
}

// TestQuiescent: the settle condition waits for every published row to be
// accounted for.
func TestQuiescent(t *testing.T) {
	t.Parallel()
	published := State{Outbox: []OutboxRow{{ID: 1, Status: "PUBLISHED"}}}
	if Quiescent(published) {
		t.Error("a PUBLISHED row with no inbox row, parked copy or skip is not quiescent")
	}
	published.Inbox = []InboxRow{{MessageID: "notification-outbox-1", Status: "SENT"}}
	if !Quiescent(published) {
		t.Error("a PUBLISHED row with a SENT inbox row is quiescent")
	}
	published.WorkerHeld = 1
	if Quiescent(published) {
		t.Error("a delivery a worker holds is not quiescent")
	}
	published.WorkerHeld, published.Queues.Retry = 0, 1
	if Quiescent(published) {
		t.Error("a message in the retry queue is not quiescent")
	}
	deferred := State{Outbox: []OutboxRow{{ID: 1, Status: "PENDING", Deferred: true}}}
	if !Quiescent(deferred) {
		t.Error("an ad deferred to the next day is quiescent")
	}
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }

// TestJudgeCountsHistory: attempts and fired faults come from the history,
// and do not change the contract's verdict.
func TestJudgeCountsHistory(t *testing.T) {
	t.Parallel()
	s := State{
		Intents:    []string{"GRADE_RENEWAL:1"},
		Outbox:     []OutboxRow{{ID: 1, DedupKey: "GRADE_RENEWAL:1", Status: "PUBLISHED"}},
		Inbox:      []InboxRow{{MessageID: "notification-outbox-1", OutboxID: 1, Status: "SENT"}},
		Ledger:     []HandsetEntry{{RefKey: "notification-outbox-1", Phone: "01000000001"}},
		Registered: []string{"01000000001"},
		Settled:    true,
	}
	h := []history.Event{
		{Pod: "relay-1", Name: "publish", Attrs: map[string]any{"outcome": "timed-out"}},
		{Pod: "relay-1", Name: "publish", Attrs: map[string]any{"outcome": "confirmed"}},
		{Pod: "worker-1", Name: "vendor-call", Attrs: map[string]any{"outcome": "NOT_SENT"}},
		{Pod: "worker-1", Name: "vendor-call", Attrs: map[string]any{"outcome": "SENT"}},
		{Pod: "worker-1", Name: "ack"},
	}
	f := []FaultRecord{{Kind: "latency", Fired: true}, {Kind: "latency", Fired: true}, {Kind: "down", Fired: false}}
	v := Judge(h, f, s)
	if !v.OK() || v.DeliveredOnce != 1 {
		t.Fatalf("verdict %s, want delivered once and OK", v)
	}
	if v.Publishes != 2 || v.VendorCalls != 2 {
		t.Errorf("publishes=%d vendor_calls=%d, want 2 and 2", v.Publishes, v.VendorCalls)
	}
	if v.FaultsFired["latency"] != 2 || v.FaultsFired["down"] != 0 {
		t.Errorf("faults fired %v, want latency=2 and no down", v.FaultsFired)
	}
}

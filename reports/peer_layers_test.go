package reports

import (
	"testing"

	"github.com/outboxchaos/outboxchaos/history"
)

// TestLayersReadTheEvidence: each layer is counted from its own event —
// the broker's duplicate flag, a second fresh ack, the consumer's
// already-processed — and a republish counts whatever its attempt's
// outcome.
func TestLayersReadTheEvidence(t *testing.T) {
	pub := func(pod, mid, outcome string, dup bool) history.Event {
		return history.Event{Name: history.Publish, Pod: pod, Attrs: map[string]any{
			history.KeyMessageID: mid, history.KeyOutcome: outcome, "duplicate": dup}}
	}
	h := []history.Event{
		{Name: history.Start, Pod: "relay-1"}, {Name: history.Start, Pod: "relay-2"}, {Name: history.Start, Pod: "worker-1"},
		pub("relay-1", "m1", "confirmed", false), pub("relay-2", "m1", "confirmed", true), // broker dedup
		pub("relay-1", "m2", "timed-out", false), pub("relay-2", "m2", "confirmed", true), // stored, then deduped
		pub("relay-1", "m3", "confirmed", false), pub("relay-2", "m3", "confirmed", false), // past the window
		{Name: AlreadyProcessed, Pod: "worker-1", Attrs: map[string]any{history.KeyMessageID: "m3"}},
		pub("relay-2", "m4", "confirmed", false),
	}
	got := *NewLayers(h, 1, 0)
	want := Layers{Relays: 2, Republished: 3, BrokerDedup: 2, StoredAgain: 1, Copies: 1, ConsumerStopped: 1}
	if got != want {
		t.Fatalf("NewLayers = %+v, want %+v", got, want)
	}
}

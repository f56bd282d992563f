package checker

import (
	"strings"
	"testing"

	"github.com/outboxchaos/outboxchaos/history"
)

// TestRepublishViolations: both bounds, on hand-written histories.
func TestRepublishViolations(t *testing.T) {
	t.Parallel()
	claim := func(pod string, ids ...float64) history.Event {
		xs := make([]any, len(ids))
		for i, id := range ids {
			xs[i] = id
		}
		return history.Event{Pod: pod, Name: "claim", Attrs: map[string]any{"ids": xs}}
	}
	pub := func(id float64, outcome string) history.Event {
		return history.Event{Pod: "relay-1", Name: "publish", Attrs: map[string]any{"outbox_id": id, "outcome": outcome}}
	}
	reclaim := func(ids ...float64) history.Event { e := claim("relay-2", ids...); e.Name = "reclaim"; return e }
	fresh := func(id int64) history.Event {
		return history.Event{Pod: "worker-1", Name: "delivery", Attrs: map[string]any{"message_id": MessageID(id), "redelivered": false}}
	}
	for _, tc := range []struct {
		name    string
		history []history.Event
		faults  []FaultRecord
		want    string // substring of the one violation; "" for none
	}{
		{"published once", []history.Event{claim("relay-1", 1), pub(1, "confirmed"), fresh(1)}, nil, ""},
		{"republished after a return", []history.Event{claim("relay-1", 1), pub(1, "returned"), claim("relay-1", 1), pub(1, "confirmed"), fresh(1)}, nil, ""},
		{"republished after a reclaim", []history.Event{claim("relay-1", 1), pub(1, "confirmed"), fresh(1), reclaim(1), claim("relay-2", 1), pub(1, "confirmed"), fresh(1)}, nil, ""},
		{"a confirmed row published again", []history.Event{claim("relay-1", 1), pub(1, "confirmed"), claim("relay-1", 1), pub(1, "confirmed")}, nil,
			"outbox row 1 published 2 times; its failures (0) and lease reclaims (0) explain 1"},
		{"a hidden second copy", []history.Event{claim("relay-1", 1), pub(1, "confirmed"), fresh(1), fresh(1)}, nil,
			"notification-outbox-1 reached workers as 2 fresh copies"},
		{"a replayed copy", []history.Event{claim("relay-1", 1), pub(1, "confirmed"), fresh(1), fresh(1)},
			[]FaultRecord{{Kind: "replay-parked", Target: MessageID(1), Fired: true}}, ""},
		{"a retry copy sent just before the worker died", []history.Event{claim("relay-1", 1), pub(1, "confirmed"), fresh(1),
			{Pod: "worker-1", Name: "republish", Attrs: map[string]any{"message_id": MessageID(1), "to": "retry"}}, fresh(1)}, nil, ""},
		{"a peer's rows are not judged", []history.Event{pub(1, "confirmed"), pub(1, "confirmed")}, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := RepublishViolations(tc.history, tc.faults)
			switch {
			case tc.want == "" && len(got) > 0:
				t.Fatalf("want none, got %q", got)
			case tc.want != "" && (len(got) != 1 || !strings.Contains(got[0], tc.want)):
				t.Fatalf("want one containing %q, got %q", tc.want, got)
			}
		})
	}
}

// TestAllOrNothingCaughtOnlyByTheBound: the recorded run of canary
// all-or-nothing keeps every other part of the contract.
func TestAllOrNothingCaughtOnlyByTheBound(t *testing.T) {
	t.Parallel()
	rec := loadRun(t, "unroutable-mid-batch-seed105606-all-or-nothing")
	onlyBroken(t, rec, "republish-bound")
}

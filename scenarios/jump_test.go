package scenarios

import (
	"testing"

	"github.com/outboxchaos/outboxchaos/peers"
)

// The clock jumps only for a run of our own pipeline on the shared
// services, with no start time and no clock of the caller's.
func TestJumpsOff(t *testing.T) {
	t.Parallel()
	ours := peers.Peer{Name: peers.Ours}
	for _, tc := range []struct {
		name string
		s    Scenario
		o    Options
		peer peers.Peer
		off  bool
	}{
		{"plain", Scenario{Name: "x"}, Options{}, ours, false},
		{"no-jumps", Scenario{Name: "x"}, Options{NoJumps: true}, ours, true},
		{"caller's clock", Scenario{Name: "x"}, Options{Clock: "file:/tmp/c"}, ours, true},
		{"time of day", Scenario{Name: "x", Start: "20:39:50"}, Options{}, ours, true},
		{"containers", Scenario{Name: "x", Infra: "single"}, Options{}, ours, true},
		{"peer", Scenario{Name: "x"}, Options{}, peers.Peer{Name: "watermill"}, true},
		{"jetstream", Scenario{Name: "x"}, Options{}, peers.Peer{Name: peers.Ours, Features: peers.Features{JetStream: &peers.JetStream{}}}, true},
	} {
		e := &Env{Scenario: &tc.s, Peer: tc.peer}
		if why := jumpsOff(e, tc.o); (why != "") != tc.off {
			t.Errorf("%s: jumpsOff = %q, want off=%v", tc.name, why, tc.off)
		}
	}
}

// A wait for an absence, at any depth, never jumps: a jump could bring
// what it waits to see absent.
func TestWaitsForAbsence(t *testing.T) {
	t.Parallel()
	ev := &EventCond{Name: "publish"}
	for _, tc := range []struct {
		c    Cond
		want bool
	}{
		{Cond{Ledger: 6}, false},
		{Cond{NoEvent: ev}, true},
		{Cond{All: []Cond{{Ledger: 1}, {Any: []Cond{{Killed: "relay-1"}, {NoEvent: ev}}}}}, true},
		{Cond{Any: []Cond{{Ledger: 1}, {Killed: "relay-1"}}}, false},
	} {
		if got := tc.c.waitsForAbsence(); got != tc.want {
			t.Errorf("%s: waitsForAbsence = %v, want %v", tc.c, got, tc.want)
		}
	}
}

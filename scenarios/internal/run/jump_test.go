package run

import (
	"testing"
	"time"

	"github.com/outboxchaos/outboxchaos/peers"
	"github.com/outboxchaos/outboxchaos/scenarios/scenario"
	"github.com/outboxchaos/outboxchaos/system/clock"
)

// The clock jumps only for a run of our own pipeline on the shared
// services with no clock of the caller's; a start time of its own does
// not stop it (crossesRule guards the times of day).
func TestJumpsOff(t *testing.T) {
	t.Parallel()
	ours := peers.Peer{Name: peers.Ours}
	for _, tc := range []struct {
		name string
		s    scenario.Scenario
		o    Options
		peer peers.Peer
		off  bool
	}{
		{"plain", scenario.Scenario{Name: "x"}, Options{}, ours, false},
		{"no-jumps", scenario.Scenario{Name: "x"}, Options{NoJumps: true}, ours, true},
		{"caller's clock", scenario.Scenario{Name: "x"}, Options{Clock: "file:/tmp/c"}, ours, true},
		{"time of day", scenario.Scenario{Name: "x", Start: "20:39:50"}, Options{}, ours, false},
		{"containers", scenario.Scenario{Name: "x", Infra: "single"}, Options{}, ours, true},
		{"peer", scenario.Scenario{Name: "x"}, Options{}, peers.Peer{Name: "watermill"}, true},
		{"jetstream", scenario.Scenario{Name: "x"}, Options{}, peers.Peer{Name: peers.Ours, Features: peers.Features{JetStream: &peers.JetStream{}}}, true},
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
	ev := &scenario.EventCond{Name: "publish"}
	for _, tc := range []struct {
		c    scenario.Cond
		want bool
	}{
		{scenario.Cond{Ledger: 6}, false},
		{scenario.Cond{NoEvent: ev}, true},
		{scenario.Cond{All: []scenario.Cond{{Ledger: 1}, {Any: []scenario.Cond{{Killed: "relay-1"}, {NoEvent: ev}}}}}, true},
		{scenario.Cond{Any: []scenario.Cond{{Ledger: 1}, {Killed: "relay-1"}}}, false},
	} {
		if got := waitsForAbsence(&tc.c); got != tc.want {
			t.Errorf("%s: waitsForAbsence = %v, want %v", tc.c, got, tc.want)
		}
	}
}

// A jump never passes a time of day a rule reads, nor comes within
// ruleMargin of one.
func TestCrossesRule(t *testing.T) {
	t.Parallel()
	c := Compressed()
	at := func(hms string) time.Time {
		v, err := time.ParseInLocation("2006-01-02 15:04:05", "2026-12-03 "+hms, clock.Seoul)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, tc := range []struct {
		from, to string
		want     bool
	}{
		{"10:00:00", "10:00:03", false},
		{"20:39:55", "20:39:59", true}, // within a second of the ad cut-off
		{"20:39:55", "20:39:58", false},
		{"20:39:50", "20:40:05", true},
		{"20:40:01", "20:40:04", false},
		{"20:49:58", "20:50:01", true},
		{"08:59:58", "09:00:02", true}, // midnight UTC
		{"23:59:58", "00:00:01", true},
	} {
		to := at(tc.to)
		if to.Before(at(tc.from)) {
			to = to.Add(24 * time.Hour)
		}
		if got := crossesRule(c, at(tc.from), to); (got != "") != tc.want {
			t.Errorf("%s → %s: crossesRule = %q, want crossing %v", tc.from, tc.to, got, tc.want)
		}
	}
}

package explore

import (
	"maps"
	"slices"
	"testing"

	"github.com/outboxchaos/outboxchaos/checker"
	"github.com/outboxchaos/outboxchaos/faults"
	"github.com/outboxchaos/outboxchaos/system/killpoint"
)

// TestHeldPairs: about one schedule in three holds one unit of a pair of
// the pipeline's concurrent units: its pod frozen at a point of the pair's
// role, a fault on the other unit while frozen, then resumed (or, for a
// refused window, the window's answers delayed); every pair is
// drawn, no schedule freezes two pods, a swarm schedule that left pauses
// out holds none, and each validates. The draw is the
// last: without it every seed gives the schedule it gave before, but for
// the topology the pair needs.
func TestHeldPairs(t *testing.T) {
	t.Parallel()
	pairs := map[string]int{}
	for seed := int64(0); seed < 900; seed++ {
		s := Generate(withoutDraw{NewRandDraw(seed), "", []string{"stale actor"}})
		if err := s.Scenario("pair").Validate(); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		before := Generate(withoutDraw{NewRandDraw(seed), "held pair", []string{"stale actor"}})
		pauses, held := 0, 0
		pair := ""
		for _, f := range s.Faults {
			if f.Kind == "pause-point" {
				pauses++
			}
			if f.Pair == RefusedPair && f.Kind == "latency" {
				held++
				pair = f.Pair
			}
			if f.When == WhenPaused && f.Pair != "" {
				held++
				pair = f.Pair
				if f.Pod != roleOfPointPod(s, f) {
					t.Fatalf("seed %d: %s resumes %s", seed, f, f.Pod)
				}
			}
		}
		if held > 0 && s.Swarm != nil && !slices.Contains(s.Swarm, "pause-point") {
			t.Fatalf("seed %d: a held pair in a swarm without pauses: %s", seed, s)
		}
		if pauses > 1 {
			t.Fatalf("seed %d: %d pods frozen: %s", seed, pauses, s)
		}
		if held == 0 {
			if len(s.Faults) != len(before.Faults) {
				t.Fatalf("seed %d: %s, without the pair %s", seed, s, before)
			}
			continue
		}
		if pair == RefusedPair {
			// The pair's misrouted publish is the only one.
			before.Faults = slices.DeleteFunc(before.Faults, func(t Timed) bool { return t.Kind == "failpoint" && t.Point == killpoint.FailMisroute })
		}
		if len(s.Faults) <= len(before.Faults) || len(before.Faults) > 0 && s.Faults[0].String() != before.Faults[0].String() {
			t.Fatalf("seed %d: the pair changed earlier faults: %s, without it %s", seed, s, before)
		}
		pairs[pair]++
	}
	for _, p := range HeldPairs() {
		if pairs[p] == 0 {
			t.Errorf("pair %q never drawn in 900 schedules (%v)", p, pairs)
		}
	}
}

// roleOfPointPod is the pod a held pair's pause-point freezes: the first
// of the role its pause is armed in.
func roleOfPointPod(s Schedule, resume Timed) string {
	for _, f := range s.Faults {
		if f.Kind == "pause-point" && f.Pair == resume.Pair {
			return f.Role + "-1"
		}
	}
	return ""
}

// AddHeld counts a pair drawn, held when its pause-point fired, and each
// family of its partner's faults that fired while held.
func TestAddHeld(t *testing.T) {
	t.Parallel()
	s := Schedule{Faults: []Timed{
		{Spec: faults.Spec{Kind: "pause-point", Point: "relay.before-publish", Hit: 2}, When: WhenArmed, Role: "relay", Pair: "p"},
		{Spec: faults.Spec{Kind: "failpoint", Point: "relay.misroute-publish", Hit: 3}, When: WhenArmed, Role: "relay", Pair: "p"},
		{Spec: faults.Spec{Kind: "resume", Pod: "relay-1"}, When: WhenPaused, Pair: "p",
			Held: []faults.Spec{{Kind: "down", Link: "rabbitmq-relay"}, {Kind: "kill", Pod: "relay-2"}}},
	}}
	c := NewCoverage()
	c.AddHeld(s, []checker.FaultRecord{{Kind: "pause-point", Target: "relay", Fired: false, Detail: "pause-point relay.before-publish:2"}})
	c.AddHeld(s, []checker.FaultRecord{
		{Kind: "pause-point", Target: "relay", Fired: true, Detail: "pause-point relay.before-publish:2: relay-1 froze"},
		{Kind: "failpoint", Target: "relay", Fired: true, Detail: "failpoint relay.misroute-publish:3"},
		{Kind: "down", Target: "rabbitmq-relay", Fired: true},
		{Kind: "kill", Target: "relay-2", Fired: false},
	})
	c.AddHeld(Schedule{}, nil)
	want := map[string]int{"p" + HeldDrawn: 2, "p" + HeldFroze: 1, "p" + HeldWith + "down": 1, "p" + HeldWith + "failpoint": 1}
	if !maps.Equal(c.Held, want) {
		t.Errorf("held %v, want %v", c.Held, want)
	}
}

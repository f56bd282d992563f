package explore

import (
	"slices"
	"testing"

	"github.com/outboxchaos/outboxchaos/faults"
	"github.com/outboxchaos/outboxchaos/system/killpoint"
)

// TestPairSweep: every cell of the sweep gives a schedule that holds the
// cell's pair at the cell's point with the cell's fault on the partner,
// the same schedule for the same budget seed, and a valid scenario.
func TestPairSweep(t *testing.T) {
	cells := PairCells()
	want := 0
	for _, p := range heldPairs {
		want += len(p.Points) * len(p.Faults)
		if p.Refusable {
			want += p.Hits
		}
	}
	if len(cells) != want {
		t.Fatalf("%d cells, want every pair × point × fault and each refusable pair's windows: %d", len(cells), want)
	}
	for i, c := range cells {
		s, seed, ok := PairSchedule(7, i)
		if !ok {
			t.Errorf("cell %d (%s): no seed of %d kept the pair", i, c, pairSeedTries)
			continue
		}
		again, seed2, _ := PairSchedule(7, i)
		if seed2 != seed || again.String() != s.String() {
			t.Errorf("cell %d: another schedule on a second draw", i)
		}
		if c.refused {
			checkRefusedCell(t, i, c, s)
			continue
		}
		var pause, resume *Timed
		for k := range s.Faults {
			switch ft := &s.Faults[k]; {
			case ft.Pair == c.Pair && ft.Kind == "pause-point":
				pause = ft
			case ft.Pair == c.Pair && ft.When == WhenPaused:
				resume = ft
			}
		}
		if pause == nil || resume == nil || pause.Point != c.Point {
			t.Errorf("cell %d (%s): schedule %s does not hold the pair at its point", i, c, s)
			continue
		}
		inHeld := slices.ContainsFunc(resume.Held, func(f faults.Spec) bool { return faultName(f) == c.Fault })
		armed := slices.ContainsFunc(s.Faults, func(t Timed) bool {
			return t.Pair == c.Pair && t.Kind == "failpoint" && t.Point == heldPairs[c.pair].Faults[c.fault].Point
		})
		if !inHeld && !armed {
			t.Errorf("cell %d (%s): the partner's fault is missing from %s", i, c, s)
		}
		if err := s.Scenario("pair").Validate(); err != nil {
			t.Errorf("cell %d: %v", i, err)
		}
	}
}

// checkRefusedCell: a refused-window cell refuses one message of its
// window and misroutes one of the next, with the broker's answers to the
// relay delayed from the start, and holds no pod.
func checkRefusedCell(t *testing.T, i int, c PairCell, s Schedule) {
	t.Helper()
	w := c.point + 1
	var refuse, misroute, delay bool
	for _, f := range s.Faults {
		switch {
		case f.Kind == "pause-point":
			t.Errorf("cell %d (%s): a refused window holds no pod, %s does", i, c, s)
		case f.Pair != RefusedPair:
		case f.Point == killpoint.FailRefuse:
			refuse = f.Hit > drainBatch*(w-1) && f.Hit <= drainBatch*w
		case f.Point == killpoint.FailMisroute:
			misroute = f.Hit > drainBatch*w && f.Hit <= drainBatch*(w+1) && s.PerKind*len(s.Kinds) >= f.Hit
		case f.Kind == "latency":
			delay = f.When == WhenFirst && f.Link == "rabbitmq-relay"
		}
	}
	if !refuse || !misroute || !delay || !s.Drain || s.Relays != 1 {
		t.Errorf("cell %d (%s): schedule %s is not window %d refused and window %d misrouted behind delayed answers", i, c, s, w, w+1)
	}
	if err := s.Scenario("pair").Validate(); err != nil {
		t.Errorf("cell %d: %v", i, err)
	}
}

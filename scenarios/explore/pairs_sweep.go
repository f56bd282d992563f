package explore

import (
	"fmt"
	"slices"

	"github.com/outboxchaos/outboxchaos/faults"
	"github.com/outboxchaos/outboxchaos/system/killpoint"
)

// The held-pair sweep enumerates what random schedules only draw: every
// pair of concurrent units of work (heldPairs) × every point its first
// unit is held at × every fault its partner may meet, one schedule each.
// The rest of each schedule is drawn as any other, from a seed of its own;
// the first seed whose schedule keeps the pair (a schedule holds one pod
// at most, so a pause drawn earlier leaves the pair out) is taken, so the
// sweep is the same every time for one budget seed.

// PairCell is one cell of the sweep: a pair, the point its first unit is
// held at and the fault its partner meets.
type PairCell struct {
	Pair, Point string
	Fault       string // the fault as its spec prints
	pair, point int
	fault       int
	// refused: a refused-window cell, window point+1 refused (RefusedPair).
	refused bool
}

func (c PairCell) String() string {
	return fmt.Sprintf("%s: held at %s, the other meets %s", c.Pair, c.Point, c.Fault)
}

// PairCells lists the sweep's cells in order.
func PairCells() []PairCell {
	var out []PairCell
	for i, p := range heldPairs {
		for j, pt := range p.Points {
			for k, f := range p.Faults {
				out = append(out, PairCell{Pair: p.Name, Point: pt, Fault: faultName(f), pair: i, point: j, fault: k})
			}
		}
	}
	// The refused windows come after every held cell, so a cell's number
	// keeps its schedule.
	for i, p := range heldPairs {
		if !p.Refusable {
			continue
		}
		for w := 1; w <= p.Hits; w++ {
			out = append(out, PairCell{Pair: RefusedPair, Point: fmt.Sprintf("window %d's answers", w),
				Fault: fmt.Sprintf("one message of window %d refused, one of window %d misrouted", w, w+1), pair: i, point: w - 1, refused: true})
		}
	}
	return out
}

// faultName is a fault as a sweep cell names it: as the fault prints.
func faultName(sp faults.Spec) string {
	if sp.Kind == faults.KindFailpoint {
		// Armed in the held pod at a hit near its freeze.
		return "failpoint " + sp.Point + " near the hold"
	}
	if f, err := sp.Build(); err == nil {
		return f.String()
	}
	return sp.Kind
}

// forcedDraw draws as its Draw does, then gives the labels in force their
// forced value (clamped to the draw's range), so every other choice is
// the one the seed makes.
type forcedDraw struct {
	Draw
	force map[string]int
}

func (f forcedDraw) Int(label string, lo, hi int) int {
	v := f.Draw.Int(label, lo, hi)
	if x, ok := f.force[label]; ok {
		return min(max(x, lo), hi)
	}
	return v
}

// pairSeedTries bounds the seeds tried for a schedule that keeps its pair.
const pairSeedTries = 256

// PairSchedule is cell i of the sweep for a budget seeded seed, with the
// seed it was drawn from; ok is false if no seed tried kept the pair.
func PairSchedule(seed int64, i int) (s Schedule, drawSeed int64, ok bool) {
	cells := PairCells()
	if i < 0 || i >= len(cells) {
		return Schedule{}, 0, false
	}
	c := cells[i]
	p := heldPairs[c.pair]
	force := map[string]int{"held pair": 0, "pair": c.pair, "pair point": c.point, "pair faults": 1, "pair fault": c.fault, "swarm": 0, "pair refused window": 0, "stale actor": 1}
	kept := func(t Timed) bool { return t.Pair == p.Name && t.Kind == faults.KindPausePoint && t.Point == c.Point }
	if c.refused {
		// The refused window alone: no other fault on the relay's link or
		// in its first life, and every kind three times over.
		force = map[string]int{"held pair": 0, "pair": c.pair, "pair hit": c.point + 1, "swarm": 0, "pair refused window": 1, "stale actor": 1,
			"per_kind": 3, "faults": 0, "sized faults": 0, "claim race": 1, "job crash": 1, "workers' database down": 1,
			"relay clock past the scheduled date": 1}
		// Enough messages for window B's misrouted one.
		kept = func(t Timed) bool {
			return t.Pair == RefusedPair && t.Point == killpoint.FailMisroute && s.PerKind*len(s.Kinds) >= t.Hit
		}
	}
	for try := range pairSeedTries {
		drawSeed = ScheduleSeed(seed, 1_000_000+i*pairSeedTries+try)
		s = Generate(forcedDraw{Draw: NewRandDraw(drawSeed), force: force})
		if slices.ContainsFunc(s.Faults, kept) {
			if s.Swarm == nil && s.Reconcile == "" {
				s.Reconcile = ReconcileModes[i%len(ReconcileModes)]
			}
			return s, drawSeed, true
		}
	}
	return Schedule{}, 0, false
}

package explore

import (
	"time"

	"github.com/outboxchaos/outboxchaos/faults"
	"github.com/outboxchaos/outboxchaos/scenarios/catalogue"
)

// The ways Mutate changes a schedule.
const (
	MutateRetime   = "retime"   // one window earlier or later, shorter or longer
	MutateAdd      = "add"      // one window of a fresh draw added
	MutateDrop     = "drop"     // one window left out
	MutateSettings = "settings" // a fresh draw's settings instead
)

// maxWindows bounds the windows a mutation leaves in a schedule.
const maxWindows = 6

// mutate returns a variant of parent for a coverage-guided exploration
// (explore --guided), as a fuzzer mutates an input that reached new code:
// one of its fault windows moved or resized, a window of a fresh draw
// added, one left out, or a fresh draw's settings. Only windows
// (WhenWindow: a link or node fault in place for a while, complete in
// itself) are touched, so a pause keeps its resume and an armed point its
// pod. The result says which mutation it made.
func mutate(parent Schedule, d Draw) (Schedule, string) {
	child := parent
	child.Faults = append([]Timed(nil), parent.Faults...)
	child.Config = mergeConfig(nil, parent.Config)
	fresh := Generate(d)
	var mine, theirs []int
	for i, f := range child.Faults {
		if f.When == WhenWindow {
			mine = append(mine, i)
		}
	}
	for i, f := range fresh.Faults {
		if f.When == WhenWindow {
			theirs = append(theirs, i)
		}
	}
	ops := []string{MutateSettings}
	if len(mine) > 0 {
		ops = append(ops, MutateRetime, MutateRetime)
	}
	if len(theirs) > 0 && len(mine) < maxWindows {
		ops = append(ops, MutateAdd)
	}
	if len(mine) > 1 {
		ops = append(ops, MutateDrop)
	}
	op := ops[d.Int("mutation", 0, len(ops)-1)]
	switch op {
	case MutateRetime:
		i := mine[d.Int("mutate which window", 0, len(mine)-1)]
		f := child.Faults[i]
		scale := []float64{0.5, 0.8, 1.25, 2}
		// Bounded as the generator bounds them (4 × the longest deadline
		// drawn around), so a run still ends inside its awaits.
		f.After = faults.Duration(min(time.Duration(float64(f.After)*scale[d.Int("mutate after", 0, len(scale)-1)]), 2*catalogue.MaxDrawn))
		f.For = faults.Duration(min(max(time.Duration(float64(f.For)*scale[d.Int("mutate for", 0, len(scale)-1)]), 10*time.Millisecond), 4*catalogue.MaxDrawn))
		f.Boundary, f.Band = "", "" // drawn around a deadline no more
		child.Faults[i] = f
	case MutateAdd:
		child.Faults = append(child.Faults, fresh.Faults[theirs[d.Int("mutate which fresh window", 0, len(theirs)-1)]])
	case MutateDrop:
		i := mine[d.Int("mutate which window", 0, len(mine)-1)]
		child.Faults = append(child.Faults[:i], child.Faults[i+1:]...)
	case MutateSettings:
		child.Config = mergeConfig(nil, fresh.Config)
	}
	return child, op
}

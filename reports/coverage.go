package reports

import (
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/outboxchaos/outboxchaos/scenarios/explore"
)

// writeCoverage renders the explorations' coverage by fired evidence:
// fault family × pipeline phase (single), family × family (two fired
// faults in place at once), and how many family@phase pairs were reached.
func writeCoverage(p func(string, ...any), c *explore.Coverage) {
	if c == nil || c.Schedules == 0 {
		return
	}
	fams := map[string]bool{}
	for k := range c.Single {
		f, _, _ := strings.Cut(k, "@")
		fams[f] = true
	}
	families := make([]string, 0, len(fams))
	for f := range fams {
		families = append(families, f)
	}
	sort.Strings(families)
	p("### Fault coverage, by fired evidence\n\nOver the %d judged schedules the ledger has coverage for: how many reached each cell with a fault "+
		"the fault ledger says fired. A kill-point, failpoint or pause-point reaches its point's phase, a vendor mode the send (or the "+
		"reconciler's lookup), a fault in place for a while (a link down, stalled or slow) the phases that logged events meanwhile "+
		"(idle: none did).\n\n", c.Schedules)
	p("| family |")
	for _, ph := range explore.Phases {
		p(" %s |", ph)
	}
	p("\n|---|%s\n", strings.Repeat("---|", len(explore.Phases)))
	cells := 0
	for _, f := range families {
		p("| %s |", f)
		for _, ph := range explore.Phases {
			n := c.Single[f+"@"+ph]
			if n > 0 {
				cells++
			}
			p(" %s |", count(n))
		}
		p("\n")
	}
	p("\nPairwise: schedules where two different fired faults of these families were in place at once (a pod fault from its arming "+
		"until its phase last logged an event) "+
		"(%d of the %d possible family@phase pairs among the %d cells reached).\n\n| |", len(c.Pairs), cells*(cells+1)/2, cells)
	for _, f := range families {
		p(" %s |", f)
	}
	p("\n|---|%s\n", strings.Repeat("---|", len(families)))
	for _, a := range families {
		p("| %s |", a)
		for _, b := range families {
			p(" %s |", count(c.FamilyPairs[min(a, b)+" + "+max(a, b)]))
		}
		p("\n")
	}
	p("\n")
	writeHeld(p, c)
}

// writeHeld renders the held pairs: per pair of concurrent units, the
// schedules that drew it, that held one unit at its point, and that held
// it while a fault of each family fired on the other.
func writeHeld(p func(string, ...any), c *explore.Coverage) {
	if len(c.Held) == 0 {
		return
	}
	p("Held pairs: one unit of a pair the pipeline runs at once frozen at a point of its own while a fault hits the other, then " +
		"resumed. Drawn, held (its pause-point fired; for a refused window, the broker refused window A's message while its answers were held), " +
		"and held while a fault of each family fired on its partner; then the stale actors, each frozen holding a row until the others moved it " +
		"(at most a bound), then resumed: drawn and held.\n\n")
	p("| pair | drawn | held | with a fault fired |\n|---|---:|---:|---|\n")
	for _, pair := range slices.Concat(explore.HeldPairs(), explore.StaleActors()) {
		var with []string
		for _, f := range explore.Families {
			if n := c.Held[pair+explore.HeldWith+f]; n > 0 {
				with = append(with, f+" "+strconv.Itoa(n))
			}
		}
		if len(with) == 0 {
			with = []string{"·"}
		}
		p("| %s | %s | %s | %s |\n", pair, count(c.Held[pair+explore.HeldDrawn]), count(c.Held[pair+explore.HeldFroze]), strings.Join(with, ", "))
	}
	p("\n")
}

func count(n int) string {
	if n == 0 {
		return "·"
	}
	return strconv.Itoa(n)
}

package explore

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/outboxchaos/outboxchaos/checker"
	"github.com/outboxchaos/outboxchaos/faults"
	"github.com/outboxchaos/outboxchaos/history"
)

// Phases are the pipeline's phases a fault can meet, in pipeline order;
// "idle" is a fault in place while no phase logged anything.
var Phases = faults.Phases

// Coverage counts the schedules that reached each cell of fault family ×
// pipeline phase, by fired evidence: a fault counts only if the fault
// ledger says it fired, and it reached a phase by its point (a kill-point,
// failpoint or pause-point names where it bites), by what it is (a vendor
// mode bites at the send, or at a reconciler's lookup), or — for a fault in
// place for a while (a link down, stalled or slow, a node fault) — by the
// pipeline events logged while it was in place. Pairs counts the
// schedules where two different fired faults were in place at once (a pod
// fault is in place from its arming until its phase last logged an event),
// by their two cells.
type Coverage struct {
	Schedules int            `json:"schedules"`
	Single    map[string]int `json:"single"` // "family@phase"
	Pairs     map[string]int `json:"pairs"`  // "family@phase + family@phase", sorted
	// FamilyPairs counts the same schedules by their two families only.
	FamilyPairs map[string]int `json:"family_pairs"` // "family + family", sorted
	// Held counts the held pairs (pairs.go): per pair, the schedules
	// that drew it, that held its pod, and that held it while a fault of
	// a family fired on its partner (the keys HeldDrawn, HeldFroze,
	// HeldWith + family after the pair's name).
	Held map[string]int `json:"held,omitempty"`
}

// NewCoverage returns an empty coverage.
func NewCoverage() *Coverage {
	return &Coverage{Single: map[string]int{}, Pairs: map[string]int{}, FamilyPairs: map[string]int{}}
}

// reach is one fired fault's reach.
type reach struct {
	family     string
	what       string // the fault as it describes itself
	phases     []string
	start, end time.Duration
}

// Add counts one judged run's fault ledger and history.
func (c *Coverage) Add(recs []checker.FaultRecord, events []history.Event) {
	c.Schedules++
	// The last event of each phase: a pod fault is in place from its
	// arming until its phase last logged anything (a job's kill-point does
	// not overlap what the pods meet later).
	last := map[string]time.Duration{}
	for _, e := range events {
		if p := phaseOfEvent(e); p != "" {
			last[p] = max(last[p], e.At)
		}
	}
	var rs []reach
	for _, r := range recs {
		if !r.Fired || r.Kind == faults.KindResume {
			continue
		}
		what, _, _ := strings.Cut(r.Detail, ": ")
		x := reach{family: r.Kind, what: what, phases: phasesOf(r, events), start: r.Start, end: r.At}
		if !r.Windowed && len(x.phases) == 1 {
			if l, ok := last[x.phases[0]]; ok && l >= x.start {
				x.end = min(x.end, l)
			}
		}
		rs = append(rs, x)
	}
	single, pairs, fpairs := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for i, a := range rs {
		for _, p := range a.phases {
			single[a.family+"@"+p] = true
		}
		for _, b := range rs[:i] {
			if a.start > b.end || b.start > a.end || a.what == b.what {
				continue // apart, or one fault armed in several pods (a clock)
			}
			fpairs[min(a.family, b.family)+" + "+max(a.family, b.family)] = true
			for _, p := range a.phases {
				for _, q := range b.phases {
					x, y := a.family+"@"+p, b.family+"@"+q
					if x > y {
						x, y = y, x
					}
					pairs[x+" + "+y] = true
				}
			}
		}
	}
	for k := range single {
		c.Single[k]++
	}
	for k := range pairs {
		c.Pairs[k]++
	}
	for k := range fpairs {
		c.FamilyPairs[k]++
	}
}

// Merge adds another coverage's counts.
func (c *Coverage) Merge(o *Coverage) {
	c.Schedules += o.Schedules
	for k, v := range o.Single {
		c.Single[k] += v
	}
	for k, v := range o.Pairs {
		c.Pairs[k] += v
	}
	for k, v := range o.FamilyPairs {
		c.FamilyPairs[k] += v
	}
	for k, v := range o.Held {
		if c.Held == nil {
			c.Held = map[string]int{}
		}
		c.Held[k] += v
	}
}

// phasesOf is where a fired fault reached the pipeline: where it says it
// acts (faults.Reach), else the phases logged while it was in place.
func phasesOf(r checker.FaultRecord, events []history.Event) []string {
	if len(r.Phases) > 0 {
		return r.Phases
	}
	seen := map[string]bool{}
	for _, e := range events {
		if e.At < r.Start || e.At > r.At {
			continue
		}
		if p := phaseOfEvent(e); p != "" {
			seen[p] = true
		}
	}
	var out []string
	for _, p := range Phases {
		if seen[p] {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		out = []string{faults.PhaseIdle}
	}
	return out
}

// phaseOfEvent is the phase a pipeline event belongs to, by its pod's role
// and its name ("" for events of no phase: starts, stops, alerts).
func phaseOfEvent(e history.Event) string {
	role, _, _ := strings.Cut(e.Pod, "-")
	switch role {
	case "job":
		if e.Name == history.Job {
			return "enqueue"
		}
	case "relay":
		switch e.Name {
		case history.Claim, history.Reclaim:
			return "claim"
		case history.Publish, history.PublishFailed:
			return "publish"
		case history.Mark, history.OutboxFinal, history.LostLease, history.WriteFailed, history.AdDeferred:
			return "mark"
		}
	case "worker":
		switch e.Name {
		case history.Claim, history.ClaimFailed, history.ClaimLost, history.Release, history.ReleaseFailed:
			return "worker-claim"
		case history.VendorCall:
			return "send"
		case history.Result, history.ResultFailed, history.ResultLate:
			return "result"
		case history.Delivery, history.Ack, history.AckFailed, history.Requeue, history.NackFailed, history.Skip, history.Park,
			history.Republish, history.RetryFailed, history.ParkFailed, history.PeekFailed, history.PrecheckFailed, history.Reconnect:
			return "consume"
		}
	case "cleanup":
		if e.Name != history.Start && e.Name != history.Stop && e.Name != history.Alert {
			return "cleanup"
		}
	case "reconciler":
		if e.Name != history.Start && e.Name != history.Stop && e.Name != history.Alert {
			return "reconcile"
		}
	}
	return ""
}

// WriteTable prints the single table (family × phase: schedules whose
// fired faults reached the cell) and the pairwise one (family × family:
// schedules with two fired faults in place at once), and how many of the
// pairwise family@phase cells were reached.
func (c *Coverage) WriteTable(w io.Writer) {
	fams := map[string]bool{}
	for k := range c.Single {
		f, _, _ := strings.Cut(k, "@")
		fams[f] = true
	}
	var families []string
	for f := range fams {
		families = append(families, f)
	}
	sort.Strings(families)
	fmt.Fprintf(w, "coverage by fired evidence over %d judged schedules: family × phase (single)\n", c.Schedules)
	fmt.Fprintf(w, "%-17s", "")
	for _, p := range Phases {
		fmt.Fprintf(w, " %*s", max(len(p), 4), p)
	}
	fmt.Fprintln(w)
	cells := 0
	for _, f := range families {
		fmt.Fprintf(w, "%-17s", f)
		for _, p := range Phases {
			n := c.Single[f+"@"+p]
			if n > 0 {
				cells++
			}
			fmt.Fprintf(w, " %*s", max(len(p), 4), dot(n))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "single cells reached: %d\n\n", cells)
	fmt.Fprintln(w, "pairwise: schedules with two fired faults in place at once, family × family")
	fmt.Fprintf(w, "%-17s", "")
	for _, f := range families {
		fmt.Fprintf(w, " %6.6s", f)
	}
	fmt.Fprintln(w)
	for _, fa := range families {
		fmt.Fprintf(w, "%-17s", fa)
		for _, fb := range families {
			fmt.Fprintf(w, " %6s", dot(c.FamilyPairs[min(fa, fb)+" + "+max(fa, fb)]))
		}
		fmt.Fprintln(w)
	}
	keys := make([]string, 0, len(c.Pairs))
	for k := range c.Pairs {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if c.Pairs[a] != c.Pairs[b] {
			return c.Pairs[b] - c.Pairs[a]
		}
		return strings.Compare(a, b)
	})
	fmt.Fprintf(w, "pairwise family@phase cells reached: %d of %d possible among the single cells reached\n", len(keys), cells*(cells+1)/2)
	for _, k := range keys[:min(len(keys), 15)] {
		fmt.Fprintf(w, "  %4d  %s\n", c.Pairs[k], k)
	}
	if len(c.Held) > 0 {
		fmt.Fprintln(w, "\nheld pairs: one unit frozen at its own point (a refused window: its answers held) while a fault hits its partner (drawn, held, held with a fault fired); "+
			"then the stale actors, each frozen holding a row until the others moved it (drawn, held)")
		for _, p := range slices.Concat(HeldPairs(), StaleActors()) {
			fmt.Fprintf(w, "  %-58s %4d drawn %4d held", p, c.Held[p+HeldDrawn], c.Held[p+HeldFroze])
			for _, f := range Families {
				if n := c.Held[p+HeldWith+f]; n > 0 {
					fmt.Fprintf(w, "  %s %d", f, n)
				}
			}
			fmt.Fprintln(w)
		}
	}
}

func dot(n int) string {
	if n == 0 {
		return "."
	}
	return fmt.Sprint(n)
}

package explore

import (
	"fmt"
	"strings"
	"time"
)

// Explain describes a schedule fault by fault: for each fault with a
// duration (a window's length, a latency's delay, a pause's length), the
// boundary it was drawn around and its band, and every deadline of the
// system and the fake vendor it lies just below or just above, by name.
func Explain(s Schedule) string {
	var b strings.Builder
	fmt.Fprintf(&b, "schedule: %s\n", s)
	if s.Swarm != nil {
		fmt.Fprintf(&b, "swarm: families %s; relays=%d workers=%d drain=%v reconcile=%q\n",
			strings.Join(s.Swarm, ","), s.Relays, s.Workers, s.Drain, s.Reconcile)
	}
	for i, f := range s.Faults {
		fmt.Fprintf(&b, "%2d. %s\n", i+1, f)
		for _, d := range durations(f) {
			line := fmt.Sprintf("      %s %s:", d.what, d.d)
			if f.Boundary != "" && d.drawn {
				line += fmt.Sprintf(" drawn %s %s;", f.Band, f.Boundary)
			}
			var st []string
			for _, x := range straddles(d.d) {
				st = append(st, fmt.Sprintf("%s %s (%s)", x.Band, x.Boundary.Name, x.Boundary.D))
			}
			if len(st) == 0 {
				st = []string{"straddles no deadline"}
			}
			b.WriteString(line + " " + strings.Join(st, ", ") + "\n")
		}
	}
	return b.String()
}

type faultDuration struct {
	what  string
	d     time.Duration
	drawn bool // the duration drawn around the fault's boundary
}

// durations are the lengths a fault has.
func durations(f Timed) []faultDuration {
	var out []faultDuration
	if f.Delay > 0 {
		out = append(out, faultDuration{"delay", f.Delay.D(), true})
	}
	switch f.When {
	case WhenWindow:
		out = append(out, faultDuration{"in place", f.For.D(), f.Delay == 0})
	case WhenPaused:
		out = append(out, faultDuration{"frozen", f.For.D(), true})
	}
	return out
}

package run

import (
	"fmt"
	"strings"
	"time"

	"github.com/outboxchaos/outboxchaos/rig"
)

// The harness's clock bookkeeping (jump.go): each look that found
// something in flight, when what it found changed, and each jump.
const (
	clockNotJumped = "clock not jumped: "
	clockJumped    = "clock jumped "
)

// clockLine reports whether e is the harness's clock bookkeeping, and
// what it says: how far the clock jumped, or why it did not.
func clockLine(e rig.Entry) (jumped time.Duration, notJumped string, ok bool) {
	if e.Source != "harness" {
		return 0, "", false
	}
	if why, found := strings.CutPrefix(e.Text, clockNotJumped); found {
		return 0, why, true
	}
	rest, found := strings.CutPrefix(e.Text, clockJumped)
	if !found {
		return 0, "", false
	}
	by, _, _ := strings.Cut(rest, " ")
	d, err := time.ParseDuration(by)
	if err != nil {
		return 0, "", false
	}
	return d, "", true
}

// endsWait reports whether e is the harness acting (a step, a fault, an
// operator, a pod it starts): the end of the wait a run of clock lines
// belongs to.
func endsWait(e rig.Entry) bool {
	switch e.Source {
	case "harness", "faults", "operator":
		return true
	}
	return strings.HasPrefix(e.Text, "started (pid ")
}

// FoldClock folds the harness's clock bookkeeping of each wait or settle
// into one line: the clock lines from one line of the harness acting
// (endsWait) to the next become one, where the first was, saying how often
// and how far the clock jumped and why it did not ("clock: jumped 2× by
// 3.1s, not jumped 3× (messages queued ×2, outbox row 8 is being
// published) until +6.352s"). A wait with one clock line keeps it as it is.
func FoldClock(lines []Line) []Line {
	out := make([]Line, 0, len(lines))
	var group []rig.Entry
	at := -1 // where the group's line goes in out
	flush := func() {
		if len(group) > 1 {
			out[at] = Line{Entry: foldedClock(group)}
		}
		group, at = nil, -1
	}
	for _, l := range lines {
		if _, _, ok := clockLine(l.Entry); ok {
			if at < 0 {
				at = len(out)
				out = append(out, l)
			}
			group = append(group, l.Entry)
			continue
		}
		if at >= 0 && endsWait(l.Entry) {
			flush()
		}
		out = append(out, l)
	}
	flush()
	return out
}

// foldedClock is the one line of a wait's clock lines.
func foldedClock(group []rig.Entry) rig.Entry {
	var jumps int
	var by time.Duration
	var whys []string
	count := map[string]int{}
	for _, e := range group {
		d, why, _ := clockLine(e)
		if why == "" {
			jumps++
			by += d
			continue
		}
		if count[why] == 0 {
			whys = append(whys, why)
		}
		count[why]++
	}
	var parts []string
	if jumps > 0 {
		parts = append(parts, fmt.Sprintf("jumped %d× by %s", jumps, by.Round(time.Millisecond)))
	}
	if len(whys) > 0 {
		const shown = 3
		var ws []string
		for i, w := range whys {
			if i == shown {
				ws = append(ws, fmt.Sprintf("…+%d", len(whys)-shown))
				break
			}
			if count[w] > 1 {
				w += fmt.Sprintf(" ×%d", count[w])
			}
			ws = append(ws, w)
		}
		parts = append(parts, fmt.Sprintf("not jumped %d× (%s)", len(group)-jumps, strings.Join(ws, ", ")))
	}
	last := group[len(group)-1].At
	return rig.Entry{At: group[0].At, Source: "harness",
		Text: fmt.Sprintf("clock: %s until +%.3fs", strings.Join(parts, ", "), last.Seconds())}
}

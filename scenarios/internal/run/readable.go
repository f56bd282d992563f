package run

import (
	"strings"

	"github.com/outboxchaos/outboxchaos/rig"
)

// Marker leads a printed timeline line that decided the verdict.
const Marker = "▶"

// Line is one line of a timeline as `scenario run` prints it.
type Line struct {
	rig.Entry
	Decided string // why it decided the verdict (a Decided* value), "" if it did not
}

// ReadableTimeline returns r's timeline as `scenario run` prints it. The
// lines that decided the verdict (Decisive) are always there and say so.
// Without verbose, the other lines are only the notable ones (Notable),
// and the harness's clock bookkeeping is folded into one line per wait
// (FoldClock); verbose keeps every line as the run wrote it.
func ReadableTimeline(r Result, verbose bool) []Line {
	entries := rig.ParseTimeline(r.Timeline)
	decided := map[int]string{}
	for _, d := range Decisive(r, entries) {
		decided[d.Line] = d.Why
	}
	width := rig.SourceWidth(entries)
	var out []Line
	for i, e := range entries {
		if verbose || decided[i] != "" || Notable(e.Format(width)) {
			out = append(out, Line{Entry: e, Decided: decided[i]})
		}
	}
	if !verbose {
		out = FoldClock(out)
	}
	return out
}

// FormatLines formats lines as the timeline does, each line that decided
// the verdict led by Marker.
func FormatLines(lines []Line) []string {
	entries := make([]rig.Entry, len(lines))
	for i, l := range lines {
		entries[i] = l.Entry
	}
	width := rig.SourceWidth(entries)
	out := make([]string, len(lines))
	for i, l := range lines {
		s := l.Format(width)
		if l.Decided != "" {
			// The line begins with two spaces: the marker takes the first.
			s = Marker + strings.TrimPrefix(s, " ")
		}
		out[i] = s
	}
	return out
}

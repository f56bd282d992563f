package rig

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"
)

// liveSourceWidth is the source column width of live output, which cannot
// know the widest source in advance.
const liveSourceWidth = 12

// maxSourceWidth caps the source column of WriteTo.
const maxSourceWidth = 24

// Entry is one line of a Timeline.
type Entry struct {
	At     time.Duration // since the Timeline was created
	Source string        // a pod name, "faults", "runner", …
	Text   string
}

// Timeline is the ordered, human-readable record of a run: what every pod
// printed and what every fault did, each stamped with the time since the
// Timeline was created. It is safe for concurrent use; a nil *Timeline
// discards everything.
type Timeline struct {
	start time.Time

	mu      sync.Mutex
	entries []Entry
	live    io.Writer
}

// NewTimeline returns an empty Timeline starting now.
func NewTimeline() *Timeline {
	return &Timeline{start: time.Now()}
}

// Start returns the instant the Timeline was created.
func (t *Timeline) Start() time.Time { return t.start }

// Add appends an entry from source, formatted with fmt.Sprintf.
func (t *Timeline) Add(source, format string, args ...any) {
	if t == nil {
		return
	}
	text := fmt.Sprintf(format, args...)
	t.mu.Lock()
	defer t.mu.Unlock()
	// Stamped under the lock so that entries are in time order.
	e := Entry{At: time.Since(t.start), Source: source, Text: text}
	t.entries = append(t.entries, e)
	if t.live != nil {
		_, _ = io.WriteString(t.live, formatEntry(e, liveSourceWidth))
	}
}

// Entries returns a copy of the entries so far, in order.
func (t *Timeline) Entries() []Entry {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]Entry(nil), t.entries...)
}

// WriteTo writes every entry as a line "  +1.234s  relay-1   published 3 rows",
// with the source column as wide as the widest source (up to a limit).
func (t *Timeline) WriteTo(w io.Writer) (int64, error) {
	entries := t.Entries()
	width := SourceWidth(entries)
	var b strings.Builder
	for _, e := range entries {
		b.WriteString(formatEntry(e, width))
	}
	n, err := io.WriteString(w, b.String())
	if err != nil {
		return int64(n), fmt.Errorf("write timeline: %w", err)
	}
	return int64(n), nil
}

// SetLive makes every entry added from now on also be written to w as it
// arrives (nil stops it). Writes happen under the Timeline's lock, so a slow
// w slows every Add.
func (t *Timeline) SetLive(w io.Writer) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.live = w
}

// String formats e as one line without a trailing newline.
func (e Entry) String() string { return e.Format(0) }

// Format formats e as WriteTo does with a source column width wide,
// without a trailing newline.
func (e Entry) Format(width int) string {
	return strings.TrimSuffix(formatEntry(e, width), "\n")
}

// SourceWidth is the source column width WriteTo gives entries: the
// widest source, up to a limit.
func SourceWidth(entries []Entry) int {
	width := 0
	for _, e := range entries {
		width = max(width, len(e.Source))
	}
	return min(width, maxSourceWidth)
}

func formatEntry(e Entry, width int) string {
	at := fmt.Sprintf("+%.3fs", e.At.Seconds())
	return fmt.Sprintf("  %8s  %-*s  %s\n", at, width, e.Source, e.Text)
}

// ParseTimeline reads what WriteTo wrote back into its entries, At to the
// millisecond the lines show. A line that is no entry's own (the rest of
// a text that spans lines) joins the previous entry's Text after a
// newline, so that formatting the entries again writes the same lines.
func ParseTimeline(s string) []Entry {
	var out []Entry
	for _, line := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		e, ok := parseEntry(line)
		switch {
		case ok:
			out = append(out, e)
		case len(out) > 0:
			out[len(out)-1].Text += "\n" + line
		case line != "":
			out = append(out, Entry{Text: line})
		}
	}
	return out
}

// parseEntry reads one line formatEntry wrote: "  +1.234s  source  text".
func parseEntry(line string) (Entry, bool) {
	if !strings.HasPrefix(line, "  ") {
		return Entry{}, false
	}
	rest, ok := strings.CutPrefix(strings.TrimLeft(line, " "), "+")
	if !ok {
		return Entry{}, false
	}
	at, rest, ok := strings.Cut(rest, "s  ")
	if !ok {
		return Entry{}, false
	}
	secs, err := strconv.ParseFloat(at, 64)
	if err != nil || secs < 0 {
		return Entry{}, false
	}
	source, text, _ := strings.Cut(rest, " ")
	if source == "" {
		return Entry{}, false
	}
	return Entry{
		At:     time.Duration(math.Round(secs*1000)) * time.Millisecond,
		Source: source,
		Text:   strings.TrimLeft(text, " "),
	}, true
}

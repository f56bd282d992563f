package world

import (
	"fmt"
	"io"
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
	width := 0
	for _, e := range entries {
		width = max(width, len(e.Source))
	}
	width = min(width, maxSourceWidth)
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
func (e Entry) String() string {
	return strings.TrimSuffix(formatEntry(e, 0), "\n")
}

func formatEntry(e Entry, width int) string {
	at := fmt.Sprintf("+%.3fs", e.At.Seconds())
	return fmt.Sprintf("  %8s  %-*s  %s\n", at, width, e.Source, e.Text)
}

package rig

import (
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestTimelineOrderAndFormat(t *testing.T) {
	t.Parallel()
	tl := NewTimeline()
	var live strings.Builder
	tl.Add("early", "not echoed")
	tl.SetLive(&live)
	tl.Add("relay-1", "published %d rows", 3)
	tl.Add("faults", "latency on pg injected")

	entries := tl.Entries()
	if len(entries) != 3 {
		t.Fatalf("got %d entries, want 3", len(entries))
	}
	for i := 1; i < len(entries); i++ {
		if entries[i].At < entries[i-1].At {
			t.Errorf("entry %d at %s before entry %d at %s", i, entries[i].At, i-1, entries[i-1].At)
		}
	}
	if e := entries[1]; e.Source != "relay-1" || e.Text != "published 3 rows" {
		t.Errorf("entry = %+v", e)
	}

	var b strings.Builder
	n, err := tl.WriteTo(&b)
	if err != nil || n != int64(b.Len()) {
		t.Fatalf("WriteTo = %d, %v; wrote %d", n, err, b.Len())
	}
	line := regexp.MustCompile(`^  +\+\d+\.\d{3}s  relay-1  published 3 rows$`)
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 3 || !line.MatchString(lines[1]) {
		t.Errorf("WriteTo wrote:\n%s", b.String())
	}
	if strings.Contains(live.String(), "not echoed") || strings.Count(live.String(), "\n") != 2 ||
		!strings.Contains(live.String(), "published 3 rows") {
		t.Errorf("live output:\n%s", live.String())
	}
}

func TestTimelineConcurrentAdds(t *testing.T) {
	t.Parallel()
	tl := NewTimeline()
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			for j := range 50 {
				tl.Add("pod", "%d/%d", i, j)
			}
		})
	}
	wg.Wait()
	entries := tl.Entries()
	if len(entries) != 1000 {
		t.Fatalf("got %d entries, want 1000", len(entries))
	}
	for i := 1; i < len(entries); i++ {
		if entries[i].At < entries[i-1].At {
			t.Fatalf("entries out of time order at %d", i)
		}
	}
}

func TestNilTimelineDiscards(t *testing.T) {
	t.Parallel()
	var tl *Timeline
	tl.Add("x", "y")
	if tl.Entries() != nil {
		t.Error("nil timeline returned entries")
	}
}

// TestParseTimelineRoundTrip: what WriteTo wrote parses back into the
// same entries (to the millisecond), a text that spans lines included,
// and formats again into the same lines.
func TestParseTimelineRoundTrip(t *testing.T) {
	t.Parallel()
	entries := []Entry{
		{At: 1913 * time.Millisecond, Source: "harness", Text: "scenario x: schema s"},
		{At: 3204 * time.Millisecond, Source: "relay-1", Text: "started (pid 17206)"},
		{At: 5292 * time.Millisecond, Source: "worker-1", Text: "acked [ack] message_id=notification-outbox-8 why=history row exists step=peek"},
		{At: 6300 * time.Millisecond, Source: "harness", Text: "not settled: waited 30s:\n  outbox row 3 PUBLISHING"},
		{At: 1234567 * time.Millisecond, Source: "a-very-long-source-name-beyond-the-cap", Text: "late"},
	}
	width := SourceWidth(entries)
	var b strings.Builder
	for _, e := range entries {
		b.WriteString(e.Format(width) + "\n")
	}
	got := ParseTimeline(b.String())
	if !reflect.DeepEqual(got, entries) {
		t.Fatalf("ParseTimeline =\n%#v\nwant\n%#v\nof\n%s", got, entries, b.String())
	}
	var again strings.Builder
	for _, e := range got {
		again.WriteString(e.Format(SourceWidth(got)) + "\n")
	}
	if again.String() != b.String() {
		t.Errorf("formatted again:\n%s\nwant\n%s", again.String(), b.String())
	}
	if ParseTimeline("") != nil {
		t.Error("an empty timeline parsed into entries")
	}
}

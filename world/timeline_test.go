package world

import (
	"regexp"
	"strings"
	"sync"
	"testing"
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

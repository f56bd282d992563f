package alertsites

import (
	"slices"
	"testing"
)

// TestSitesMatchSource: every alerts.Send call in system/ has exactly one
// line in sites.tsv, and every line names a call the source has. A new
// alert, or one moved to another function, fails here until the map says
// which crash workload reaches it.
func TestSitesMatchSource(t *testing.T) {
	t.Parallel()
	sites, err := Find("../system")
	if err != nil {
		t.Fatal(err)
	}
	es, err := Entries()
	if err != nil {
		t.Fatal(err)
	}
	if len(sites) == 0 {
		t.Fatal("no alert call found in system/: the finder is broken")
	}
	lines := map[string][]int{}
	for _, e := range es {
		lines[e.Key()] = append(lines[e.Key()], e.Line)
	}
	found := map[string]bool{}
	for _, s := range sites {
		found[s.Key()] = true
		if len(lines[s.Key()]) == 0 {
			t.Errorf("%s has no line in %s", s, File)
		}
	}
	for _, e := range es {
		if !found[e.Key()] {
			t.Errorf("%s line %d names %s, which system/ does not call", File, e.Line, e.Key())
		}
		if n := lines[e.Key()]; len(n) > 1 && n[0] != e.Line {
			t.Errorf("%s line %d repeats line %d", File, e.Line, n[0])
		}
		if e.Change == "" {
			t.Errorf("%s line %d: no state change named", File, e.Line)
		}
		if !slices.Contains([]string{"job", "worker", "relay", "cleanup", "reconciler"}, e.Process) {
			t.Errorf("%s line %d: process %q is not a crash process", File, e.Line, e.Process)
		}
	}
}

// Parse refuses a line that is not six fields, and reads "-" as no
// workload.
func TestParse(t *testing.T) {
	t.Parallel()
	es, err := Parse("# c\n\na.go\tF\talert.KindX\tworker\t-\twhy\nb.go\tG\tk\trelay\tone,two\tchange\n")
	if err != nil || len(es) != 2 || es[0].Workloads != nil || !slices.Equal(es[1].Workloads, []string{"one", "two"}) {
		t.Fatalf("%+v %v", es, err)
	}
	if !slices.Equal(Workloads(es), []string{"one", "two"}) {
		t.Errorf("workloads %v", Workloads(es))
	}
	if _, err := Parse("a.go\tF\n"); err == nil {
		t.Error("a short line parsed")
	}
}

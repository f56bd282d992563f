package catalogue

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/outboxchaos/outboxchaos/checker"
	"github.com/outboxchaos/outboxchaos/faults"
	"github.com/outboxchaos/outboxchaos/scenarios/scenario"
)

// TestCatalogueRoundTripsJSON: every entry is plain data — it validates,
// prints as JSON and parses back to the same value.
func TestCatalogueRoundTripsJSON(t *testing.T) {
	t.Parallel()
	for _, s := range Named() {
		back, rec, err := scenario.Parse(s.JSON())
		if err != nil {
			t.Errorf("%s: %v", s.Name, err)
			continue
		}
		if rec != nil {
			t.Errorf("%s: a scenario file parsed as a run record", s.Name)
		}
		if !reflect.DeepEqual(s, back) {
			t.Errorf("%s: JSON round trip changed the scenario:\n%s\n%s", s.Name, s.JSON(), back.JSON())
		}
	}
}

// TestHarnessDocNamesEverything keeps docs/harness.md true: every step
// verb, condition, fault kind and rule the code knows is documented there.
func TestHarnessDocNamesEverything(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join("..", "..", "docs", "harness.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	var names []string
	// Verbs and conditions each have a row of their table: named in its
	// first cell, not just in passing.
	rows := map[string]bool{}
	for _, line := range strings.Split(doc, "\n") {
		if cells := strings.Split(line, "|"); len(cells) > 2 && strings.HasPrefix(line, "|") {
			for _, f := range strings.Split(cells[1], "`") {
				rows[f] = true
			}
		}
	}
	for _, n := range append(scenario.VerbNames(), scenario.ConditionNames()...) {
		if !rows[n] {
			t.Errorf("docs/harness.md has no table row for `%s`", n)
		}
	}
	for _, k := range faults.Kinds() {
		names = append(names, strings.SplitN(k, ":", 2)[0])
	}
	for r := range checker.RuleNames() {
		names = append(names, r)
	}
	for _, n := range names {
		if !strings.Contains(doc, "`"+n+"`") {
			t.Errorf("docs/harness.md does not name `%s`", n)
		}
	}
}

package reports

import (
	"strings"
	"testing"

	"github.com/outboxchaos/outboxchaos/checker"
	"github.com/outboxchaos/outboxchaos/scenarios"
	"github.com/outboxchaos/outboxchaos/scenarios/explore"
)

// TestGlance: the page opens with its figures, keeps them for the next
// page, and shows the last page's beside its own; a failing row and a
// surviving canary are named with the command that reproduces them.
func TestGlance(t *testing.T) {
	t.Parallel()
	ok := sample()
	ok.Verdict = checker.Verdict{Intents: 1, DeliveredOnce: 1}
	bad := sample()
	bad.Name, bad.Seed = "vendor-5xx", 9
	bad.Verdict = checker.Verdict{Intents: 1, Duplicated: 1,
		Invariants: []checker.Result{{Name: "nothing-twice", Valid: false, Violations: 1}}}
	r := Reliability{
		Named:    []scenarios.Result{ok, bad},
		Canaries: []explore.CanaryResult{{Bug: "retry-unknown"}},
		Explored: LedgerTotals{Count: map[string]int{LedgerSchedules: 2000}, Violations: map[string]int{LedgerSchedules: 3},
			Invariants: map[string]InvariantCount{"nothing-twice": {Judged: 2000, Broken: 1}}},
	}
	var b strings.Builder
	if err := WriteReliability(&b, r); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{"## At a glance", "| named scenarios that kept their row | 1 of 2 | – |",
		"| random schedules explored so far (the ledger) that broke the contract | 3 of 2000 | – |",
		"| `nothing-twice` | 1 | 0 | 2000 / 1 |", "`make scenario NAME=vendor-5xx SEED=9`", "`outboxchaos canary --bug retry-unknown`"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Index(page, "## At a glance") > strings.Index(page, "## The failure table") {
		t.Error("the glance does not open the page")
	}
	g, found := ParseGlance(page)
	if !found || g.Named != 2 || g.NamedPassed != 1 || g.Explored != 2000 || g.ExploredViolations != 3 {
		t.Fatalf("kept figures %+v (%v)", g, found)
	}
	r.Previous = &g
	r.Named = r.Named[:1]
	b.Reset()
	if err := WriteReliability(&b, r); err != nil {
		t.Fatal(err)
	}
	if want := "| named scenarios that kept their row | 1 of 1 | 1 of 2 |"; !strings.Contains(b.String(), want) {
		t.Errorf("next page lacks %q", want)
	}
	if _, found := ParseGlance("# a page from before\n"); found {
		t.Error("found figures in a page that kept none")
	}
}

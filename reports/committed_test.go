package reports_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/outboxchaos/outboxchaos/bench"
	"github.com/outboxchaos/outboxchaos/branches"
	"github.com/outboxchaos/outboxchaos/checker"
	"github.com/outboxchaos/outboxchaos/reports"
	"github.com/outboxchaos/outboxchaos/scenarios"
	"github.com/outboxchaos/outboxchaos/scenarios/catalogue"
	"github.com/outboxchaos/outboxchaos/scenarios/explore"
	"github.com/outboxchaos/outboxchaos/sim"
)

// awaitingRegeneration are the committed reports generated before their
// generator wrote the stamp (reports.Stamp: the commit and date a page was
// generated at), with the make target that regenerates each. Their
// sections are checked already, their stamp not yet. Remove a page from
// this list when you regenerate it: the test fails while a listed page
// carries its stamp, so the list stays exact.
var awaitingRegeneration = map[string]string{}

// awaitingInputs are the committed pages generated before their writer
// recorded its inputs (reports.Inputs). Remove a page when you regenerate
// it: the test fails while a listed page records them.
var awaitingInputs = map[string]bool{}

// stamp is a fixed stamp for the pages rendered here.
var stamp = reports.Stamp{Commit: "abc1234", Date: time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC)}

// judged is a run that kept its row.
func judged() scenarios.Result {
	return scenarios.Result{Name: "confirm-timeout", Row: "4", Seed: 7, Verdict: checker.Verdict{Intents: 1, DeliveredOnce: 1}}
}

// generated renders each committed report from inputs that make its
// generator write every section it can.
func generated(t *testing.T) map[string]string {
	t.Helper()
	env := reports.Environment{Go: "go1.x", Postgres: "15", RabbitMQ: "3.10", Cores: 2, Commit: stamp.Commit, Date: stamp.Date}
	r := judged()
	w1, _ := explore.ParseCrashTarget("worker:sql:update-1a2b3c:after:1")
	pr := reports.PropertyRun{Result: r}
	var rel strings.Builder
	if err := reports.WriteReliability(&rel, reports.Reliability{
		Env: env, Named: []scenarios.Result{r}, Catalogue: catalogue.Named(),
		Property: []reports.PropertyRun{pr}, Reconciled: []reports.PropertyRun{pr},
		Canaries: []explore.CanaryResult{{Bug: "retry-unknown", CaughtBy: []string{"vendor-timeout"}}},
		Crash:    []reports.CrashRun{{Workload: "one", Points: 1, Bound: 1, Outcomes: []explore.CrashOutcome{{Workload: "one", Target: w1, Result: r, Fired: true}}}},
		Branches: branchMap(),
		Explored: reports.LedgerTotals{Runs: 1, Count: map[string]int{reports.LedgerSchedules: 1, reports.LedgerCrashPoints: 1}, Violations: map[string]int{}},
	}); err != nil {
		t.Fatal(err)
	}

	cases := catalogue.PeerCases()
	p := reports.Peers{Env: env, Command: "make peers", Cases: cases[:2], Impls: []reports.PeerImpl{{Name: "ours", Settings: []string{"batch-size=50\tdesign §3"}}},
		Findings: map[string]reports.Finding{"ours/" + cases[1].Name: {Class: "documented limitation", How: "copies at the broker"}}}
	p.SetCell(reports.PeerCell{Impl: "ours", Case: cases[0].Name, Err: "a step failed"})
	p.SetCell(reports.PeerCell{Impl: "ours", Case: cases[1].Name, Verdict: checker.Verdict{Intents: 1, DeliveredOnce: 1}, Copies: 1})
	var peers strings.Builder
	if err := p.Write(&peers); err != nil {
		t.Fatal(err)
	}

	perf := &bench.Report{Started: stamp.Date, Commit: stamp.Commit, Memory: &bench.MemoryResult{Backlog: 1000},
		Peers: []bench.PeerRate{{Impl: "watermill", Rate: 1000}}, PeerRows: 10,
		Explore: &bench.ExploreCost{Seed: 1, Rows: []reports.CostRow{reports.CostOf("random schedules", []scenarios.Result{r})}}}
	day := sim.Default()
	simPage := sim.Page(&sim.Result{Day: day}, nil, "outboxchaos simulate", stamp, nil, "SIMULATION")
	capPage := sim.CapacityPage(&sim.Capacity{Seeds: []int64{1}}, "outboxchaos simulate capacity", stamp)
	return map[string]string{
		"RELIABILITY.md": rel.String(),
		"PEERS.md":       peers.String(),
		"PERFORMANCE.md": perf.Markdown(),
		"SIMULATION.md":  simPage,
		"CAPACITY.md":    capPage,
	}
}

// branchMap is a map of one error branch, reached.
func branchMap() *branches.Map {
	b := branches.Branch{Pkg: "github.com/outboxchaos/outboxchaos/system/relay", File: "github.com/outboxchaos/outboxchaos/system/relay/relay.go",
		Line: 10, Func: "Relay.RunOnce", Kind: branches.KindErr}
	return &branches.Map{Branches: []branches.Branch{b}, Reached: map[string]bool{b.ID(): true}, Instrumented: map[string]bool{b.File: true}}
}

var digits = regexp.MustCompile(`\d+`)

// headings are the level-2 headings of a page, numbers left out (the
// memory section names its backlog).
func headings(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, "## ") {
			out = append(out, digits.ReplaceAllString(l, "N"))
		}
	}
	return out
}

// Every committed report has every section its generator writes today,
// and names the commit and date it was generated at: a page generated
// before a new section (or the stamp) was added fails here until its make
// target runs again (awaitingRegeneration names each page's).
func TestCommittedReportsAreCurrent(t *testing.T) {
	t.Parallel()
	targets := map[string]string{"RELIABILITY.md": "make report", "PERFORMANCE.md": "make bench", "SIMULATION.md": "make simulate",
		"PEERS.md": "make peers", "CAPACITY.md": "make capacity"}
	for page, target := range awaitingRegeneration {
		targets[page] = target
	}
	for page, gen := range generated(t) {
		t.Run(page, func(t *testing.T) {
			if err := reports.CheckStamp([]byte(gen)); err != nil {
				t.Fatalf("the generator of %s writes no stamp: %v", page, err)
			}
			got, err := os.ReadFile(page)
			if err != nil {
				t.Fatal(err)
			}
			have := map[string]bool{}
			for _, h := range headings(string(got)) {
				have[h] = true
			}
			for _, h := range headings(gen) {
				if !have[h] {
					t.Errorf("reports/%s lacks the section %q its generator writes: run %s", page, h, targets[page])
				}
			}
			err = reports.CheckStamp(got)
			_, waiting := awaitingRegeneration[page]
			switch {
			case err != nil && !waiting:
				t.Errorf("reports/%s: %v: run %s", page, err, targets[page])
			case err == nil && waiting:
				t.Errorf("reports/%s carries its stamp now: remove it from awaitingRegeneration", page)
			}
		})
	}
}

// CheckStamp finds the stamp Rows writes, inside a larger table too, and
// says what is missing.
func TestCheckStamp(t *testing.T) {
	t.Parallel()
	if err := reports.CheckStamp([]byte("# x\n\n| | |\n|---|---|\n" + stamp.Rows() + "| Go | 1 |\n")); err != nil {
		t.Error(err)
	}
	if err := reports.CheckStamp([]byte(stamp.Table())); err != nil {
		t.Error(err)
	}
	if err := reports.CheckStamp([]byte("Generated on 2026-12-01 12:06 UTC.")); err == nil || !strings.Contains(err.Error(), "commit and date") {
		t.Errorf("an unstamped page: %v", err)
	}
}

// Every committed page was generated from HEAD's inputs: the hash a page
// recorded when it was written must be the hash of the files it names
// now. A generator, a catalogue or a ledger touched without the page's
// make target fails here, naming it.
func TestCommittedReportsRecordCurrentInputs(t *testing.T) {
	t.Parallel()
	for page, in := range reports.Inputs {
		t.Run(page, func(t *testing.T) {
			got, err := os.ReadFile(page)
			if err != nil {
				t.Fatal(err)
			}
			recorded, ok := reports.RecordedInputs(got)
			switch {
			case !ok && awaitingInputs[page]:
				return
			case !ok:
				t.Fatalf("reports/%s records no inputs: run %s", page, in.Target)
			case awaitingInputs[page]:
				t.Fatalf("reports/%s records its inputs now: remove it from awaitingInputs", page)
			}
			now, err := reports.InputsHash("..", page)
			if err != nil {
				t.Fatal(err)
			}
			if now != recorded {
				t.Errorf("reports/%s was generated from other inputs than these (%s, not %s: %s): run %s",
					page, now, recorded, strings.Join(in.Globs, " "), in.Target)
			}
		})
	}
}

// InputsHash changes with any input's contents and with none else.
func TestInputsHash(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	for _, g := range reports.Inputs["PEERS.md"].Globs {
		p := filepath.Join(root, g)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(g), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	a, err := reports.InputsHash(root, "PEERS.md")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "reports", "peers_test.go"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, _ := reports.InputsHash(root, "PEERS.md"); b != a {
		t.Error("a test file changed the hash")
	}
	if err := os.WriteFile(filepath.Join(root, "peers", "registry.go"), []byte("changed"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, _ := reports.InputsHash(root, "PEERS.md"); b == a {
		t.Error("a changed input kept the hash")
	}
	if _, ok := reports.RecordedInputs([]byte("# x\n<!-- inputs 0123456789abcdef: generated from these inputs -->\n")); !ok {
		t.Error("the recorded line is not found again")
	}
}

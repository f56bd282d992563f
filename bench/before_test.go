package bench

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/outboxchaos/outboxchaos/reports"
	"github.com/outboxchaos/outboxchaos/rig"
	"github.com/outboxchaos/outboxchaos/scenarios"
)

// A page the bench wrote reads back as its figures, and the next page
// shows them beside its own.
func TestReadBefore_TheTargetsFiguresOfAnEarlierPage(t *testing.T) {
	t.Parallel()
	old := &Report{Commit: "abc1234", Results: []Result{
		{ID: IDRawPublishWindow, Rate: 14000, Msgs: 1000, CPUOK: true, CPU: CPU{Broker: 70 * time.Millisecond, Self: 30 * time.Millisecond}},
		{ID: IDRawRelaySQL, Rate: 19000, Msgs: 1000, CPUOK: true, CPU: CPU{Database: 40 * time.Millisecond, Self: 10 * time.Millisecond}},
		{ID: IDRelay, Rate: 9000, Msgs: 1000, CPUOK: true, CPU: CPU{Broker: 70 * time.Millisecond, Database: 90 * time.Millisecond, Self: 40 * time.Millisecond}},
		{ID: IDRawConsume, Rate: 1500},
		{ID: IDRawInboxSQL, Rate: 1500},
		{ID: IDWorker0, Rate: 300},
	}}
	cost := scenarios.Cost{CPU: rig.CPU{rig.CPUPostgres: 3 * time.Second, rig.CPUPods: 500 * time.Millisecond}}
	old.Explore = &ExploreCost{Seed: 1, Rows: []reports.CostRow{{What: "random schedules, a new schema each", Runs: 2, Sum: cost}, {What: keptSchemasRow, Runs: 2, Sum: cost}}}
	path := filepath.Join(t.TempDir(), "PERFORMANCE.md")
	if err := os.WriteFile(path, []byte(old.Markdown()), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := ReadBefore(path)
	if err != nil {
		t.Fatal(err)
	}
	f := b.figures()
	if b.Commit != "abc1234" || f.RelayCPU != 200 || f.LimitCPU != 150 || f.RelayVsLimit != 0.75 || f.RelayDB != 90 || f.Relay != 9000 ||
		math.Abs(f.WorkerVsLimit-0.4) > 1e-9 || f.ScheduleCPU != 1.75 {
		t.Fatalf("figures %+v of %+v", f, b)
	}
	now := &Report{Commit: "def5678", Results: old.Results, Before: b}
	md := now.Markdown()
	for _, want := range []string{"## Before and after", "| relay's limit ÷ the relay, by CPU per message | 0.75 | 0.75 | ≥ 0.90 |",
		"| a random schedule on a kept schema, CPU seconds | 1.75 | n/a | ≤ 0.9 |"} {
		if !strings.Contains(md, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if _, err := ReadBefore(filepath.Join(t.TempDir(), "none.md")); err == nil {
		t.Error("a missing page reads")
	}
	other := filepath.Join(t.TempDir(), "other.md")
	_ = os.WriteFile(other, []byte("# a page\n"), 0o644)
	if _, err := ReadBefore(other); err == nil || !strings.Contains(err.Error(), "not a page outboxbench wrote") {
		t.Errorf("another page: %v", err)
	}
}

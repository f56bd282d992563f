package reports_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/outboxchaos/outboxchaos/reports"
	"github.com/outboxchaos/outboxchaos/rig"
	"github.com/outboxchaos/outboxchaos/scenarios"
)

// The cost table averages over the judged runs only, and names the top
// costs by their share of the sum.
func TestCostMarkdown(t *testing.T) {
	t.Parallel()
	run := func(name string, setup, steps, waiting, settle time.Duration, pg time.Duration) scenarios.Result {
		return scenarios.Result{Name: name, Cost: scenarios.Cost{Setup: setup, Steps: steps, Waiting: waiting, Settle: settle,
			CPU: rig.CPU{rig.CPUPostgres: pg, rig.CPUPods: time.Second}}}
	}
	rs := []scenarios.Result{
		run("a", time.Second, 4*time.Second, 3*time.Second, time.Second, 3*time.Second),
		run("b", time.Second, 4*time.Second, 3*time.Second, time.Second, 3*time.Second),
		{Name: "c", NotJudged: errors.New("Postgres down"), Cost: scenarios.Cost{Setup: time.Hour}},
	}
	row := reports.CostOf("random schedules", rs)
	if row.Runs != 2 {
		t.Fatalf("runs = %d, want 2 (the run not judged left out)", row.Runs)
	}
	md := reports.CostMarkdown([]reports.CostRow{row, reports.CostOf("nothing", nil)})
	// Per run: wall 6 s = setup 1 + steps 4 (waiting 3) + settle 1; 10
	// runs a minute; CPU 4 s = postgres 3 + pods 1.
	if want := "| random schedules | 2 | 6.00 | 1.00 | 4.00 | 3.00 | 1.00 | 0.00 | 10.0 | 4.00 | 3.00 | 0.00 | 1.00 | 0.00 |"; !strings.Contains(md, want) {
		t.Errorf("no row %q in\n%s", want, md)
	}
	if strings.Contains(md, "nothing") {
		t.Errorf("a group without runs has a row:\n%s", md)
	}
	if want := "Wall time: waiting in steps 50 %, the rest of the steps 17 %, settle 17 %, setup 17 %, teardown 0 %. CPU time: postgres 75 %"; !strings.Contains(md, want) {
		t.Errorf("top costs: want %q in\n%s", want, md)
	}
	if reports.CostMarkdown(nil) != "" {
		t.Error("no rows should render nothing")
	}
}

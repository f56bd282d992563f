package explore

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/outboxchaos/outboxchaos/checker"
	"github.com/outboxchaos/outboxchaos/scenarios"
	"github.com/outboxchaos/outboxchaos/system/canary"
)

// A crash point whose run was not judged is no violation, and a record of
// a run not judged is checked again as ERROR whatever its counts say.
func TestNotJudgedIsNoViolation(t *testing.T) {
	t.Parallel()
	errd := CrashOutcome{Result: scenarios.Result{Verdict: checker.Verdict{Stuck: 6}, NotJudged: errors.New("snapshot: connection refused")}}
	bad := CrashOutcome{Result: scenarios.Result{Verdict: checker.Verdict{LostSilently: 1}}}
	if errd.Violation() || !errd.NotJudged() || !bad.Violation() || bad.NotJudged() {
		t.Errorf("violation/not judged: errored %v/%v, failed %v/%v", errd.Violation(), errd.NotJudged(), bad.Violation(), bad.NotJudged())
	}
	rec := checker.Record{Scenario: "x", NotJudged: "interrupted: signal SIGINT"}
	if o, _, err := scenarios.Recheck(rec); o != scenarios.OutcomeError || err == nil || !strings.Contains(err.Error(), "SIGINT") {
		t.Errorf("recheck of a record not judged: %s, %v", o, err)
	}
	rec.NotJudged, rec.State.Settled = "", true
	if o, _, _ := scenarios.Recheck(rec); o == scenarios.OutcomeError {
		t.Errorf("recheck of a judged record: %s", o)
	}
}

// A canary whose catchers could not be judged is neither caught nor
// survived.
func TestSweepCatcherNotJudged(t *testing.T) {
	t.Parallel()
	var seen []scenarios.Result
	out := Sweep(context.Background(), unreachable(), []string{canary.AutoAck}, func(_ CanaryResult, r scenarios.Result) { seen = append(seen, r) })
	c := out[0]
	if c.Caught() || c.Outcome() != scenarios.OutcomeError || len(c.NotJudged) != len(Catchers[canary.AutoAck]) || len(seen) == 0 {
		t.Fatalf("%+v", c)
	}
	caught := CanaryResult{CaughtBy: []string{"x"}, NotJudged: []string{"y"}}
	if caught.Outcome() != scenarios.OutcomePass || (CanaryResult{}).Outcome() != scenarios.OutcomeFail {
		t.Fatal("a catcher that went red catches; no red and no error is a survivor")
	}
}

// unreachable is options whose Postgres does not answer.
func unreachable() scenarios.Options {
	o := scenarios.DefaultOptions()
	o.PGURL, o.Artifacts = "postgres://postgres@127.0.0.1:1/test?sslmode=disable", ""
	return o
}

//go:build chaos

package scenarios_test

import (
	"context"
	"testing"
	"time"

	"github.com/outboxchaos/outboxchaos/checker"
	"github.com/outboxchaos/outboxchaos/faults"
	"github.com/outboxchaos/outboxchaos/history"
	"github.com/outboxchaos/outboxchaos/scenarios"
	"github.com/outboxchaos/outboxchaos/scenarios/scenario"
	kp "github.com/outboxchaos/outboxchaos/system/killpoint"
	"github.com/outboxchaos/outboxchaos/system/notification"
	"github.com/outboxchaos/outboxchaos/system/testenv"
)

// TestVerdictFixedAtLastStep: the run ends with worker-1 frozen at a
// pause-point, its result written and its ack not yet sent (the pipeline
// is quiescent: nothing queued, the inbox row SENT). Recovering the
// pause-point continues a frozen pod; were the faults recovered before
// the pods stopped, worker-1 would ack after the last step and the final
// state would differ. The pods stop first: worker-1 never moves again,
// the delivery it held returns to the main queue, unacked.
func TestVerdictFixedAtLastStep(t *testing.T) {
	testenv.Require(t)
	t.Parallel()
	s := &scenario.Scenario{
		Name: "verdict-fixed-at-last-step", Row: "test",
		Kinds:       []notification.Kind{notification.GradeRenewal},
		Description: "the run ends with worker-1 frozen between its result and its ack",
		Fault:       "pause-point worker.after-result in worker-1, never resumed by a step",
		Outcome:     "teardown stops worker-1 before it recovers the pause-point: no ack after the last step",
		Steps: []scenario.Step{
			{Do: "enqueue"},
			{Do: "start", Roles: []string{"worker"}, Faults: []faults.Spec{{Kind: "pause-point", Point: kp.WorkerAfterResult}}},
			{Do: "start", Roles: []string{"relay", "cleanup"}},
			{Do: "await", Cond: &scenario.Cond{Paused: "worker-1"}},
		},
	}
	o := suiteOptions()
	res := scenarios.Run(context.Background(), s, o)
	if res.Err != nil && !res.State.Settled {
		t.Fatalf("the run did not settle before its teardown: %v\n%s", res.Err, res.Timeline)
	}
	if n := checker.Count(res.Events, "ack", "worker-1", nil); n != 0 {
		t.Errorf("worker-1 acked %d times after the last step: teardown let a frozen pod run on\n%s", n, res.Timeline)
	}
	if res.State.Queues.Main != 1 {
		t.Errorf("main queue holds %d, want 1: the delivery worker-1 held when it was stopped\n%s", res.State.Queues.Main, res.Timeline)
	}
}

// TestUninjectableFaultNotJudged: a fault the harness cannot put in place
// (a consent withdrawal for a member the run never seeded) leaves a run
// that is not the one written: not judged (ERROR), never a broken
// contract.
func TestUninjectableFaultNotJudged(t *testing.T) {
	testenv.Require(t)
	t.Parallel()
	s := &scenario.Scenario{
		Name: "uninjectable-fault", Row: "test",
		Kinds:       []notification.Kind{notification.GradeRenewal},
		Description: "a step injects a fault the harness cannot put in place",
		Fault:       "member 999 withdraws SMS consent: no such member",
		Outcome:     "not judged",
		Steps: []scenario.Step{
			{Do: "enqueue"},
			{Do: "inject", Faults: []faults.Spec{{Kind: "withdraw-consent", Member: 999}}},
		},
	}
	o := suiteOptions()
	o.Artifacts = t.TempDir()
	res := scenarios.Run(context.Background(), s, o)
	if res.Outcome() != scenarios.OutcomeError || res.NotJudged == nil {
		t.Fatalf("outcome %s (not judged: %v, err: %v), want ERROR\n%s", res.Outcome(), res.NotJudged, res.Err, res.Timeline)
	}
}

// TestSettleWaitsForHeldDelivery: a poison message (no outbox row
// accounts for it) reaches worker-1 over a slow broker link. While the
// worker republishes it to the parking queue and waits for the confirm,
// the broker counts the copy unacked, not ready: the queues look empty
// and no row is in flight. The settle must wait for the worker's ack; a
// settle that called this quiescent stopped worker-1 mid-park, and the
// run ended with the copy requeued or parked without its alert.
func TestSettleWaitsForHeldDelivery(t *testing.T) {
	testenv.Require(t)
	t.Parallel()
	s := &scenario.Scenario{
		Name: "settle-waits-for-held-delivery", Row: "test",
		Config:      map[string]string{"confirm-timeout": "5m"},
		Description: "the run's last step leaves worker-1 parking a poison message over a slow broker link",
		Fault:       "1.5 s latency on rabbitmq-worker; a poison message (fallback over 2,000 bytes) published to the main queue",
		Outcome:     "parked once with its PARKED alert: the settle waits for the worker's ack",
		Steps: []scenario.Step{
			{Do: "start", Roles: []string{"worker"}},
			{Do: "await", Cond: &scenario.Cond{Event: &scenario.EventCond{Name: history.ConsumeStart, Pod: "worker-1", N: 1}}},
			{Do: "inject", Faults: []faults.Spec{{Kind: faults.KindLatency, Link: "rabbitmq-worker", Delay: faults.Duration(1500 * time.Millisecond)}}},
			{Do: "inject", Faults: []faults.Spec{{Kind: faults.KindPoison, Poison: "long-fallback"}}},
			{Do: "await", Cond: &scenario.Cond{Event: &scenario.EventCond{Name: history.Delivery, Pod: "worker-1", N: 1}}},
		},
		Expect: []checker.Rule{{Rule: "parked", N: 1}, {Rule: "alerts", Kind: history.AlertParked, N: 1}},
	}
	res := scenarios.Run(context.Background(), s, suiteOptions())
	if res.Outcome() != scenarios.OutcomePass {
		t.Fatalf("outcome %s (err: %v)\n%s\n%s", res.Outcome(), res.Err, res.Verdict, res.Timeline)
	}
	if n := checker.Count(res.Events, history.Ack, "worker-1", nil); n != 1 {
		t.Errorf("worker-1 acked %d times, want 1: the settle stopped it before it let go of the delivery\n%s", n, res.Timeline)
	}
}

//go:build chaos

package scenarios_test

import (
	"context"
	"testing"
	"time"

	"github.com/outboxchaos/outboxchaos/checker"
	"github.com/outboxchaos/outboxchaos/faults"
	"github.com/outboxchaos/outboxchaos/history"
	"github.com/outboxchaos/outboxchaos/rig"
	"github.com/outboxchaos/outboxchaos/scenarios"
	"github.com/outboxchaos/outboxchaos/system/config"
	"github.com/outboxchaos/outboxchaos/system/testenv"
)

// TestInFlightSeesHeldDelivery: a driver that owns the run's clock (the
// simulator) must not jump it while a worker holds a delivery. The
// worker takes a poison message and republishes it to the parking queue,
// but the link's upstream is stalled, so its publish (and so its ack)
// cannot reach the broker until the stall ends: the broker counts the copy
// unacked, the queues look empty and no row is in flight. InFlight must
// say the worker holds a delivery; the simulated day's look before it
// counted only the queues' ready messages.
func TestInFlightSeesHeldDelivery(t *testing.T) {
	testenv.Require(t)
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	o := suiteOptions()
	o.Sandboxes = nil
	o.Tune = func(c *config.Config) { c.ConfirmTimeout = 5 * time.Minute }
	env, err := scenarios.Open(ctx, "in-flight-held-delivery", o)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = env.Close() }()
	eng := faults.NewEngine(env.FaultWorld(), time.Now())
	defer func() { _ = env.End(ctx, eng) }()
	if _, err := env.StartRole(ctx, "worker", nil, nil); err != nil {
		t.Fatal(err)
	}
	logged := func(name string) func(context.Context) (bool, error) {
		return func(context.Context) (bool, error) { return len(env.Events(name)) > 0, nil }
	}
	if err := rig.WaitFor(ctx, time.Minute, "the worker consuming", logged(history.ConsumeStart)); err != nil {
		t.Fatal(err)
	}
	for _, sp := range []faults.Spec{
		{Kind: faults.KindStall, Link: "rabbitmq-worker", Direction: "upstream"},
		{Kind: faults.KindPoison, Poison: "long-fallback"},
	} {
		f, err := sp.Build()
		if err != nil {
			t.Fatal(err)
		}
		if err := eng.Inject(ctx, f); err != nil {
			t.Fatal(err)
		}
	}
	if err := rig.WaitFor(ctx, time.Minute, "the worker's delivery", logged(history.Delivery)); err != nil {
		t.Fatal(err)
	}
	busy, _, err := env.InFlight(ctx, eng, checker.QueueDepths{})
	if err != nil {
		t.Fatal(err)
	}
	if acks := env.Events(history.Ack); len(acks) > 0 {
		t.Fatalf("the worker acked through a stalled link: %v", acks)
	}
	if busy != "a worker holds a delivery" {
		t.Errorf("in flight: %q, want the worker's held delivery", busy)
	}
}

//go:build containers

package infra_test

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/outboxchaos/outboxchaos/infra"
)

// TestClusterLeaderLossAndReturn starts Postgres and a three-node cluster,
// declares a quorum queue on the first node, kills its leader and brings
// it back: the fault primitives the infrastructure scenarios use.
func TestClusterLeaderLossAndReturn(t *testing.T) {
	t0 := time.Now()
	in := infra.StartT(t, infra.Options{Postgres: true, RabbitNodes: 3, Log: slog.New(slog.NewTextHandler(os.Stderr, nil))})
	t.Logf("started in %s: %v", time.Since(t0).Round(time.Millisecond), in.StartTimes())
	node1, _ := in.Node("rabbitmq-1")
	conn, err := amqp.Dial(node1.URL)
	if err != nil {
		t.Fatal(err)
	}
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueueDeclare("q", true, false, false, false, amqp.Table{"x-queue-type": "quorum"}); err != nil {
		t.Fatal(err)
	}
	_ = conn.Close()
	ctx := context.Background()
	leader, err := in.QueueLeader(ctx, "q")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("leader %s", leader)
	if err := in.Crash(ctx, leader); err != nil {
		t.Fatal(err)
	}
	var next string
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
		if next, err = in.QueueLeader(ctx, "q"); err == nil && next != leader {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if next == leader || next == "" {
		t.Fatalf("no new leader after %s died: %v", leader, err)
	}
	t.Logf("new leader %s", next)
	t1 := time.Now()
	if err := in.Start(ctx, leader); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s back in %s", leader, time.Since(t1).Round(time.Millisecond))
	if err := in.Crash(ctx, "postgres"); err != nil {
		t.Fatal(err)
	}
	t2 := time.Now()
	if err := in.Start(ctx, "postgres"); err != nil {
		t.Fatal(err)
	}
	t.Logf("postgres back after SIGKILL in %s", time.Since(t2).Round(time.Millisecond))
}

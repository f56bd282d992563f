package relay_test

import (
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/outboxchaos/outboxchaos/history"
	"github.com/outboxchaos/outboxchaos/system/broker"
	"github.com/outboxchaos/outboxchaos/system/config"
	"github.com/outboxchaos/outboxchaos/system/notification"
	"github.com/outboxchaos/outboxchaos/system/publisher"
	"github.com/outboxchaos/outboxchaos/system/testenv"
)

func declare(t *testing.T, ch *amqp.Channel, cfg config.Config) broker.Names {
	t.Helper()
	if err := broker.TopologyOf(cfg).Declare(ch); err != nil {
		t.Fatal(err)
	}
	return broker.NamesFor(cfg.Prefix)
}

func realPublisher(t *testing.T, cfg config.Config) *publisher.Publisher {
	t.Helper()
	p := publisher.New(cfg.AMQPURL, broker.NamesFor(cfg.Prefix).Exchange, cfg.ConfirmTimeout)
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// design §4: an unroutable message (mandatory, returned) is a failure even
// though the broker acks it: the row is not PUBLISHED but PENDING with
// backoff, and nothing is in the queue.
func TestRealBroker_ReturnedMessageIsNotPublished(t *testing.T) {
	t.Parallel()
	db := testenv.NewMigratedSchema(t)
	prefix := testenv.NewPrefix(t)
	cfg := testConfig(db, prefix, "relay-x")
	cfg.ConfirmTimeout = 5 * time.Second // generous: a late confirm would be an indefinite outcome, not a return
	ch := testenv.AMQPChannel(t)
	n := declare(t, ch, cfg)
	// Nothing routes "send" any more.
	if err := ch.QueueUnbind(n.Main, broker.KeySend, n.Exchange, nil); err != nil {
		t.Fatal(err)
	}
	clk := frozen(10, 0, 0)
	now := clk.Now()
	addMember(t, db, 1, true, true)
	id := enqueue(t, db, now, notification.GradeRenewal, 1, now)
	st := runOnce(t, newRelay(cfg, db, realPublisher(t, cfg), clk, &testenv.AlertRecorder{}))
	if st.Published != 0 || st.Failed != 1 {
		t.Fatalf("stats %+v, want the returned message failed", st)
	}
	r := row(t, db, id)
	if r.Status != history.OutboxPending || r.Attempts != 1 || !r.NextAttemptAt.Equal(now.Add(time.Minute)) ||
		!strings.Contains(str(r.LastError), "returned") {
		t.Fatalf("row %s attempts %d next %s err %s; want PENDING, attempt 1, +1m, returned",
			r.Status, r.Attempts, r.NextAttemptAt, str(r.LastError))
	}
	main, _, _, err := broker.Depths(ch, prefix)
	if err != nil {
		t.Fatal(err)
	}
	if main != 0 {
		t.Fatalf("main queue holds %d messages", main)
	}
}

// design §4: a batch of 50 goes out with pipelined confirms; all are confirmed
// and marked, and the queue holds exactly those 50 persistent messages with
// message_id notification-outbox-{id}.
func TestRealBroker_BatchOf50AllConfirmed(t *testing.T) {
	t.Parallel()
	db := testenv.NewMigratedSchema(t)
	prefix := testenv.NewPrefix(t)
	cfg := testConfig(db, prefix, "relay-x")
	cfg.ConfirmTimeout = 5 * time.Second // generous: the machine is shared
	ch := testenv.AMQPChannel(t)
	n := declare(t, ch, cfg)
	clk := frozen(10, 0, 0)
	now := clk.Now()
	want := map[string]bool{}
	for m := int64(1); m <= 50; m++ {
		addMember(t, db, m, true, true)
		want[notification.MessageID(enqueue(t, db, now, notification.GradeRenewal, m, now))] = true
	}
	st := runOnce(t, newRelay(cfg, db, realPublisher(t, cfg), clk, &testenv.AlertRecorder{}))
	if st.Claimed != 50 || st.Published != 50 || st.Failed != 0 {
		t.Fatalf("stats %+v, want 50 published", st)
	}
	if depth, _, _, err := broker.Depths(ch, prefix); err != nil || depth != 50 {
		t.Fatalf("main queue depth %d (%v), want 50", depth, err)
	}
	// basic.get is refused on a single-active-consumer quorum queue:
	// consume instead.
	deliveries, err := ch.Consume(n.Main, "", true, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	timeout := time.After(20 * time.Second)
	for len(got) < len(want) {
		var d amqp.Delivery
		select {
		case d = <-deliveries:
		case <-timeout:
			t.Fatalf("only %d of %d messages arrived", len(got), len(want))
		}
		if d.DeliveryMode != amqp.Persistent {
			t.Fatalf("%s is not persistent", d.MessageId)
		}
		if _, err := notification.Decode(d.Body); err != nil {
			t.Fatalf("%s: %v", d.MessageId, err)
		}
		if got[d.MessageId] {
			t.Fatalf("%s queued twice", d.MessageId)
		}
		got[d.MessageId] = true
	}
	if len(got) != len(want) {
		t.Fatalf("queue held %d messages, want %d", len(got), len(want))
	}
	for id := range want {
		if !got[id] {
			t.Fatalf("%s missing from the queue", id)
		}
	}
}

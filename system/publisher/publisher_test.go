package publisher_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/outboxchaos/outboxchaos/system/broker"
	"github.com/outboxchaos/outboxchaos/system/killpoint"
	"github.com/outboxchaos/outboxchaos/system/publisher"
	"github.com/outboxchaos/outboxchaos/system/testenv"
)

// setup declares the topology under a fresh prefix and returns a channel
// for inspection and the names.
func setup(t *testing.T) (*amqp.Channel, broker.Names, string) {
	t.Helper()
	prefix := testenv.NewPrefix(t)
	ch := testenv.AMQPChannel(t)
	if err := (broker.Topology{Prefix: prefix, DeliveryLimit: 5, RetryTTL: time.Minute}).Declare(ch); err != nil {
		t.Fatal(err)
	}
	return ch, broker.NamesFor(prefix), prefix
}

func newPub(t *testing.T, n broker.Names, timeout time.Duration) *publisher.Publisher {
	t.Helper()
	p := publisher.New(testenv.AMQPURL(), n.Exchange, timeout)
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func msgs(n int, key string) []publisher.Message {
	out := make([]publisher.Message, n)
	for i := range out {
		out[i] = publisher.Message{MessageID: fmt.Sprintf("m-%s-%d", key, i), RoutingKey: key, Body: []byte(`{}`)}
	}
	return out
}

func depth(t *testing.T, ch *amqp.Channel, prefix string) (int, int, int) {
	t.Helper()
	m, r, p, err := broker.Depths(ch, prefix)
	if err != nil {
		t.Fatal(err)
	}
	return m, r, p
}

func TestPublishBatch_RoutableMessageConfirmed(t *testing.T) {
	t.Parallel()
	ch, n, prefix := setup(t)
	p := newPub(t, n, 5*time.Second)
	res, err := p.PublishBatch(context.Background(), msgs(1, broker.KeySend))
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || res[0].Outcome != publisher.Confirmed || res[0].Err != nil || res[0].MessageID != "m-send-0" {
		t.Fatalf("result %+v, want confirmed", res)
	}
	if m, _, _ := depth(t, ch, prefix); m != 1 {
		t.Fatalf("main queue depth %d, want 1", m)
	}
}

// design §4: an unroutable mandatory publish is returned; the broker still
// acks it, but the outcome must be Returned (definite failure), and the
// results of routable neighbours in the same batch are not confused with it.
func TestPublishBatch_UnroutableIsReturnedDespiteAck(t *testing.T) {
	t.Parallel()
	ch, n, prefix := setup(t)
	p := newPub(t, n, 5*time.Second)
	batch := append(msgs(3, broker.KeySend), msgs(2, "nowhere")...)
	batch = append(batch, msgs(3, broker.KeyRetry)[2:]...)
	res, err := p.PublishBatch(context.Background(), batch)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		want := publisher.Confirmed
		if batch[i].RoutingKey == "nowhere" {
			want = publisher.Returned
		}
		if r.Outcome != want || r.MessageID != batch[i].MessageID {
			t.Fatalf("message %d (%s, key %s): %s, want %s", i, r.MessageID, batch[i].RoutingKey, r.Outcome, want)
		}
		if want == publisher.Returned && (r.Err == nil || !strings.Contains(r.Err.Error(), "unroutable")) {
			t.Fatalf("returned message error %v", r.Err)
		}
		if r.Outcome.Indefinite() {
			t.Fatalf("%s reported indefinite", r.Outcome)
		}
	}
	if m, r, _ := depth(t, ch, prefix); m != 3 || r != 1 {
		t.Fatalf("depths main %d retry %d, want 3 and 1", m, r)
	}
	// The next batch on the same publisher is not affected by the returns.
	res, err = p.PublishBatch(context.Background(), msgs(1, broker.KeyParking))
	if err != nil || res[0].Outcome != publisher.Confirmed {
		t.Fatalf("next batch: %+v %v", res, err)
	}
}

// A broker nack (queue full with reject-publish) is Nacked: definite.
func TestPublishBatch_NackedWhenQueueRejects(t *testing.T) {
	t.Parallel()
	ch, n, _ := setup(t)
	q, err := ch.QueueDeclare("", false, true, true, false, amqp.Table{"x-max-length": int64(1), "x-overflow": "reject-publish"})
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.QueueBind(q.Name, "full", n.Exchange, false, nil); err != nil {
		t.Fatal(err)
	}
	p := newPub(t, n, 5*time.Second)
	res, err := p.PublishBatch(context.Background(), msgs(2, "full"))
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Outcome != publisher.Confirmed || res[1].Outcome != publisher.Nacked || res[1].Outcome.Indefinite() {
		t.Fatalf("outcomes %s, %s; want confirmed, nacked", res[0].Outcome, res[1].Outcome)
	}
}

// A confirm that does not arrive in time is TimedOut, which is indefinite:
// the message may well be in the queue (here: it is).
func TestPublishBatch_ConfirmTimeoutIsIndefinite(t *testing.T) {
	t.Parallel()
	ch, n, prefix := setup(t)
	p := newPub(t, n, time.Nanosecond)
	const count = 200
	res, err := p.PublishBatch(context.Background(), msgs(count, broker.KeySend))
	if err != nil {
		t.Fatal(err)
	}
	timedOut, confirmed := 0, 0
	for _, r := range res {
		switch r.Outcome {
		case publisher.TimedOut:
			timedOut++
			if !r.Outcome.Indefinite() || r.Err == nil {
				t.Fatalf("timed-out result %+v must be indefinite with an error", r)
			}
		case publisher.Confirmed:
			confirmed++
		default:
			t.Fatalf("unexpected outcome %s", r.Outcome)
		}
	}
	if timedOut == 0 {
		t.Fatalf("no confirm timed out with a 1ns timeout over %d messages", count)
	}
	// Every confirmed message is in the queue; timed-out ones may or may
	// not be (the publisher drops the channel after a timeout, and the
	// broker may or may not have taken them first).
	m := 0
	testenv.Eventually(t, 10*time.Second, fmt.Sprintf("main queue depth of at least the %d confirmed messages", confirmed), func() bool {
		m, _, _ = depth(t, ch, prefix)
		return m >= confirmed
	})
	t.Logf("%d confirmed, %d timed out; %d of the timed-out messages reached the queue anyway", confirmed, timedOut, m-confirmed)
}

func TestOutcome_Indefinite(t *testing.T) {
	t.Parallel()
	for o, want := range map[publisher.Outcome]bool{
		publisher.Confirmed: false, publisher.Nacked: false, publisher.Returned: false,
		publisher.TimedOut: true, publisher.ChannelClosed: true, publisher.WriteFailed: true,
	} {
		if o.Indefinite() != want {
			t.Errorf("%s.Indefinite() = %v, want %v", o, o.Indefinite(), want)
		}
	}
}

// With no broker, the batch fails as a whole: nothing went out.
func TestPublishBatch_UnreachableBrokerErrors(t *testing.T) {
	t.Parallel()
	p := publisher.New("amqp://guest:guest@127.0.0.1:1/", "x", time.Second)
	defer p.Close()
	res, err := p.PublishBatch(context.Background(), msgs(1, "send"))
	if err == nil || res != nil {
		t.Fatalf("got %+v, %v; want an error and no results", res, err)
	}
	if err := p.Connect(context.Background()); err == nil {
		t.Fatal("Connect succeeded to a closed port")
	}
}

// The FailRefuse failpoint sends its publish to a queue of the
// publisher's connection that refuses everything: RabbitMQ nacks that one
// message, as it nacks a publish to a full queue, and confirms the rest of
// the window. Not parallel: failpoints are process-wide.
func TestPublishBatch_RefuseFailpointIsNacked(t *testing.T) {
	t.Cleanup(killpoint.DisarmFail)
	ch, n, prefix := setup(t)
	if err := killpoint.ArmFail(killpoint.FailRefuse + ":2"); err != nil {
		t.Fatal(err)
	}
	p := newPub(t, n, 5*time.Second)
	res, err := p.PublishBatch(context.Background(), msgs(3, broker.KeySend))
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []publisher.Outcome{publisher.Confirmed, publisher.Nacked, publisher.Confirmed} {
		if res[i].Outcome != want {
			t.Fatalf("message %d: %s (%v), want %s", i, res[i].Outcome, res[i].Err, want)
		}
	}
	if m, _, _ := depth(t, ch, prefix); m != 2 {
		t.Fatalf("main queue depth %d, want 2 (the refused publish went nowhere)", m)
	}
}

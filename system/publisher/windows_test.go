package publisher_test

import (
	"context"
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/outboxchaos/outboxchaos/system/broker"
	"github.com/outboxchaos/outboxchaos/system/canary"
	"github.com/outboxchaos/outboxchaos/system/publisher"
	"github.com/outboxchaos/outboxchaos/system/testenv"
)

// Two windows in flight on one channel: the first ends in a way that
// replaces the channel (a nack, a confirm timeout), the second carries a
// message nothing is bound to. RabbitMQ acks a returned mandatory publish
// after returning it, so the second window's message is confirmed unless
// its return is found; it must come back Returned, whichever window read
// the return off the channel and whichever replaced the channel.

// fullQueue declares an exclusive queue bound to key that holds one message
// and refuses the next (x-max-length 1, reject-publish), and fills it.
func fullQueue(t *testing.T, ch *amqp.Channel, p *publisher.Publisher, n broker.Names, key string) {
	t.Helper()
	q, err := ch.QueueDeclare("", false, true, true, false, amqp.Table{"x-max-length": int64(1), "x-overflow": "reject-publish"})
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.QueueBind(q.Name, key, n.Exchange, false, nil); err != nil {
		t.Fatal(err)
	}
	res, err := p.PublishBatch(context.Background(), msgs(1, key))
	if err != nil || res[0].Outcome != publisher.Confirmed {
		t.Fatalf("filling the bounded queue: %+v %v", res, err)
	}
}

// laterWindow is window B: one message to a key with no binding, then one
// to the main queue.
func laterWindow() []publisher.Message {
	return append(msgs(1, "nowhere"), msgs(2, broker.KeySend)[1:]...)
}

// checkLaterWindow: B's unroutable message is Returned; its routable one
// is Confirmed, or indefinite where allowIndefinite (its ack may have been
// cut off by the channel's replacement), never a definite failure.
func checkLaterWindow(t *testing.T, res []publisher.Result, allowIndefinite bool) {
	t.Helper()
	if len(res) != 2 {
		t.Fatalf("window B: %d results, want 2", len(res))
	}
	if r := res[0]; r.MessageID != "m-nowhere-0" || r.Outcome != publisher.Returned || r.Err == nil {
		t.Fatalf("window B's unroutable message %s: %s (%v), want returned (the broker returned it, then acked it)", r.MessageID, r.Outcome, r.Err)
	}
	if r := res[1]; r.Outcome != publisher.Confirmed && !(allowIndefinite && r.Outcome.Indefinite()) {
		t.Fatalf("window B's routable message %s: %s (%v), want confirmed", r.MessageID, r.Outcome, r.Err)
	}
}

// nackedThenLater sends window A, which a full bounded queue nacks, then
// window B before A is awaited; once every answer of both is in, it
// awaits A (which must come back nacked) and returns B's results.
func nackedThenLater(t *testing.T, ch *amqp.Channel, p *publisher.Publisher, n broker.Names) []publisher.Result {
	t.Helper()
	fullQueue(t, ch, p, n, "full")
	ctx := context.Background()
	a, err := p.Send(ctx, msgs(2, "full")[1:])
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.Send(ctx, laterWindow())
	if err != nil {
		t.Fatal(err)
	}
	a.WaitConfirms()
	b.WaitConfirms()
	if res := p.Await(ctx, a); len(res) != 1 || res[0].Outcome != publisher.Nacked {
		t.Fatalf("window A: %+v, want nacked", res)
	}
	return p.Await(ctx, b)
}

// Window A is nacked (a bounded queue refuses it) while window B, sent
// before A is awaited, carries an unroutable message. Every answer of both
// windows is in before A is awaited, so A's Await reads B's return off the
// channel, and its nack replaces the channel before B is awaited.
func TestAwait_NackedWindowKeepsLaterWindowsReturn(t *testing.T) {
	t.Parallel()
	ch, n, _ := setup(t)
	p := newPub(t, n, time.Minute)
	checkLaterWindow(t, nackedThenLater(t, ch, p, n), false)
}

// The SharedReturns canary, chosen when the publisher is built, restores
// the loss: window A's nack drops the returns with the channel, and window
// B's unroutable message, acked by the broker, counts as confirmed. Not
// parallel: the canary is process-wide.
func TestSharedReturnsCanary(t *testing.T) {
	t.Cleanup(func() { _ = canary.Arm("") })
	ch, n, _ := setup(t)
	if err := canary.Arm(canary.SharedReturns); err != nil {
		t.Fatal(err)
	}
	p := newPub(t, n, time.Minute)
	_ = canary.Arm("")
	if res := nackedThenLater(t, ch, p, n); res[0].Outcome != publisher.Confirmed {
		t.Fatalf("window B's unroutable message with the canary armed: %s, want confirmed (its return dropped with A's channel)", res[0].Outcome)
	}
}

// Window A's confirm times out while window B, sent on the same channel,
// carries an unroutable message. The broker's answers are held in the link
// until A's deadline has passed and A's Await has replaced the channel;
// then B's return and acks arrive on the replaced channel.
func TestAwait_TimedOutWindowKeepsLaterWindowsReturn(t *testing.T) {
	t.Parallel()
	ch, n, prefix := setup(t)
	link := newHeldLink(t)
	p := publisher.New(link.url, n.Exchange, time.Minute)
	t.Cleanup(func() { _ = p.Close() })
	ctx := context.Background()
	if err := p.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	link.hold()
	p.SetConfirmTimeout(0) // A's deadline is past when it is sent; its ack waits in the link
	a, err := p.Send(ctx, msgs(1, broker.KeySend))
	if err != nil {
		t.Fatal(err)
	}
	p.SetConfirmTimeout(time.Minute)
	b, err := p.Send(ctx, laterWindow())
	if err != nil {
		t.Fatal(err)
	}
	// Both windows reached the broker (B's return and acks are written
	// before its routable message is counted in the main queue's depth;
	// the channel's replacement comes after them on the wire).
	testenv.Eventually(t, 10*time.Second, "both windows' routable messages in the main queue", func() bool {
		m, _, _ := depth(t, ch, prefix)
		return m == 2
	})
	if res := p.Await(ctx, a); len(res) != 1 || res[0].Outcome != publisher.TimedOut {
		t.Fatalf("window A: %+v, want timed out", res)
	}
	link.release()
	b.WaitConfirms()
	checkLaterWindow(t, p.Await(ctx, b), true)
}

// heldLink is a TCP relay between a publisher and the test broker whose
// broker-to-client direction can be held: what the broker sends meanwhile
// waits in the link, in order, until release.
type heldLink struct {
	url string

	mu   sync.Mutex
	cond *sync.Cond
	held bool
}

func newHeldLink(t *testing.T) *heldLink {
	t.Helper()
	u, err := url.Parse(testenv.AMQPURL())
	if err != nil {
		t.Fatal(err)
	}
	target := u.Host
	if u.Port() == "" {
		target = net.JoinHostPort(u.Hostname(), "5672")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &heldLink{}
	l.cond = sync.NewCond(&l.mu)
	u.Host = ln.Addr().String()
	l.url = u.String()
	var wg sync.WaitGroup
	var connsMu sync.Mutex
	var conns []net.Conn
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				_ = c.Close()
				continue
			}
			connsMu.Lock()
			conns = append(conns, c, s)
			connsMu.Unlock()
			wg.Add(2)
			go func() {
				defer wg.Done()
				_, _ = io.Copy(s, c)
				_ = s.Close()
				_ = c.Close()
			}()
			go func() {
				defer wg.Done()
				l.down(c, s)
			}()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		l.release()
		connsMu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		connsMu.Unlock()
		wg.Wait()
	})
	return l
}

// down copies the broker's bytes to the client, waiting while held.
func (l *heldLink) down(client, server net.Conn) {
	defer func() { _ = client.Close(); _ = server.Close() }()
	buf := make([]byte, 32<<10)
	for {
		n, err := server.Read(buf)
		if n > 0 {
			l.mu.Lock()
			for l.held {
				l.cond.Wait()
			}
			l.mu.Unlock()
			if _, werr := client.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// hold keeps the broker's bytes in the link from now on. Call it while the
// connection is idle: bytes already on their way to the client still pass.
func (l *heldLink) hold() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.held = true
}

// release passes what was held and stops holding.
func (l *heldLink) release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.held = false
	l.cond.Broadcast()
}

// Package publisher owns the relay's side of RabbitMQ: persistent, mandatory
// publishes with publisher confirms, pipelined per batch (all messages out,
// then each deferred confirm awaited against one timeout), and a NotifyReturn
// listener so an unroutable message is a failure even when the broker then
// acks it (SPEC §4).
//
// Outcomes follow Maelstrom's split: Confirmed and Returned/Nacked are
// definite; a confirm timeout, a channel closed before the confirm, or a
// publish write error are indefinite (the message may be in the queue).
package publisher

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/outboxchaos/outboxchaos/system/canary"
	"github.com/outboxchaos/outboxchaos/system/killpoint"
)

// Outcome is what became of one publish.
type Outcome int

// Publish outcomes.
const (
	Confirmed     Outcome = iota // acked and not returned
	Nacked                       // broker nacked: definitely not enqueued
	Returned                     // unroutable (mandatory): definitely not enqueued
	TimedOut                     // no confirm within the timeout: indefinite
	ChannelClosed                // channel died before the confirm: indefinite
	WriteFailed                  // publish frame could not be written: indefinite
)

var outcomeNames = [...]string{"confirmed", "nacked", "returned", "timed-out", "channel-closed", "write-failed"}

// String names the outcome.
func (o Outcome) String() string { return outcomeNames[o] }

// Indefinite reports whether the message might have been enqueued although
// the publish did not succeed.
func (o Outcome) Indefinite() bool { return o == TimedOut || o == ChannelClosed || o == WriteFailed }

// Message is one publish.
type Message struct {
	MessageID  string
	RoutingKey string
	Body       []byte
	Headers    amqp.Table
}

// Result is the outcome of one Message.
type Result struct {
	MessageID string
	Outcome   Outcome
	Err       error
}

// Publisher publishes on one confirm-mode channel, re-dialling after any
// failure. It is safe for concurrent use (batches are serialised).
type Publisher struct {
	url, exchange string
	timeout       time.Duration

	mu      sync.Mutex
	conn    *amqp.Connection
	ch      *amqp.Channel
	returns chan amqp.Return
}

// returnBuffer bounds the messages published per confirm window: returns
// are buffered so the connection's reader never blocks on them.
const returnBuffer = 1024

// New returns a publisher to exchange at url; confirmTimeout bounds the wait
// for a batch's confirms.
func New(url, exchange string, confirmTimeout time.Duration) *Publisher {
	return &Publisher{url: url, exchange: exchange, timeout: confirmTimeout}
}

// Connect dials now (normally dialling is lazy), to fail fast at start-up.
func (p *Publisher) Connect(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ensure()
}

func (p *Publisher) ensure() error {
	if p.ch != nil && !p.ch.IsClosed() && p.conn != nil && !p.conn.IsClosed() {
		return nil
	}
	p.resetLocked()
	conn, err := amqp.DialConfig(p.url, amqp.Config{Dial: amqp.DefaultDial(5 * time.Second), Heartbeat: 5 * time.Second})
	if err != nil {
		return fmt.Errorf("dial broker: %w", err)
	}
	ch, err := conn.Channel()
	if err != nil {
		_ = conn.Close()
		return fmt.Errorf("open channel: %w", err)
	}
	if err := ch.Confirm(false); err != nil {
		_ = conn.Close()
		return fmt.Errorf("enable publisher confirms: %w", err)
	}
	p.conn, p.ch = conn, ch
	p.returns = ch.NotifyReturn(make(chan amqp.Return, returnBuffer))
	return nil
}

func (p *Publisher) resetLocked() {
	if p.conn != nil {
		// Close waits for the broker's close-ok; on a stalled link that
		// would hold the relay until the heartbeat gives up. Let it finish
		// in the background.
		go func(c *amqp.Connection) { _ = c.Close() }(p.conn)
	}
	p.conn, p.ch, p.returns = nil, nil, nil
}

// Close closes the connection. Safe to call twice.
func (p *Publisher) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.resetLocked()
	return nil
}

// PublishBatch publishes every message, then waits for all confirms, and
// returns one Result per message in order. The error is non-nil only when
// nothing could be published (no connection); then no message went out.
func (p *Publisher) PublishBatch(ctx context.Context, msgs []Message) ([]Result, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.ensure(); err != nil {
		return nil, err
	}
	out := make([]Result, 0, len(msgs))
	for start := 0; start < len(msgs); start += returnBuffer {
		end := min(start+returnBuffer, len(msgs))
		out = append(out, p.window(ctx, msgs[start:end])...)
	}
	return out, nil
}

func (p *Publisher) window(ctx context.Context, msgs []Message) []Result {
	res := make([]Result, len(msgs))
	dcs := make([]*amqp.DeferredConfirmation, len(msgs))
	broken := false
	for i, m := range msgs {
		res[i].MessageID = m.MessageID
		if broken {
			res[i].Outcome, res[i].Err = WriteFailed, errors.New("channel broken earlier in the batch")
			continue
		}
		dc, err := p.ch.PublishWithDeferredConfirmWithContext(ctx, p.exchange, m.RoutingKey, true, false, amqp.Publishing{
			MessageId:    m.MessageID,
			DeliveryMode: amqp.Persistent,
			ContentType:  "application/json",
			Headers:      m.Headers,
			Timestamp:    time.Now(),
			Body:         m.Body,
		})
		if err != nil {
			res[i].Outcome, res[i].Err = WriteFailed, fmt.Errorf("publish %s: %w", m.MessageID, err)
			broken = true
			continue
		}
		dcs[i] = dc
	}
	killpoint.Hit(killpoint.RelayAfterPublish)
	wctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	reset := broken
	for i, dc := range dcs {
		if dc == nil {
			continue
		}
		ack, err := dc.WaitContext(wctx)
		switch {
		case err != nil && canary.On(canary.TimeoutAsConfirmed):
			res[i].Outcome = Confirmed
			reset = true
		case err != nil:
			res[i].Outcome, res[i].Err = TimedOut, fmt.Errorf("confirm of %s: %w", msgs[i].MessageID, err)
			reset = true
		case ack:
			res[i].Outcome = Confirmed
		case p.ch.IsClosed():
			res[i].Outcome, res[i].Err = ChannelClosed, errors.New("channel closed before confirm")
			reset = true
		default:
			res[i].Outcome, res[i].Err = Nacked, errors.New("broker nacked the publish")
		}
	}
	// A basic.return precedes the ack of the same message on the wire and
	// the connection reader hands it to our buffered channel before it
	// processes the ack, so once the confirms are in, every return is here.
	returned := map[string]string{}
	for drained := false; !drained; {
		select {
		case r, ok := <-p.returns:
			if !ok {
				drained = true
				break
			}
			returned[r.MessageId] = fmt.Sprintf("%d %s", r.ReplyCode, r.ReplyText)
		default:
			drained = true
		}
	}
	for i := range res {
		if why, ok := returned[res[i].MessageID]; ok && res[i].Outcome == Confirmed && !canary.On(canary.ReturnedAsPublished) {
			res[i].Outcome, res[i].Err = Returned, fmt.Errorf("returned unroutable: %s", why)
		}
	}
	if reset {
		// After a timeout or a broken channel, late confirms and returns
		// would be misattributed: start the next batch on a new channel.
		p.resetLocked()
	}
	return res
}

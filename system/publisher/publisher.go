// Package publisher owns the relay's side of RabbitMQ: persistent, mandatory
// publishes with publisher confirms, pipelined per batch (all messages out,
// then each deferred confirm awaited against one timeout), and a NotifyReturn
// listener so an unroutable message is a failure even when the broker then
// acks it (design §4). A window's publishes go out in one write (wire.go).
// Each basic.return is filed under the window that sent its message
// (returns.go), on whichever channel that window went out, so a window
// never loses its returns to another window's failure.
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

	"github.com/outboxchaos/outboxchaos/history"
	"github.com/outboxchaos/outboxchaos/system/broker"
	"github.com/outboxchaos/outboxchaos/system/canary"
	"github.com/outboxchaos/outboxchaos/system/crashpoint"
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

// outcomeNames are the names a history reads (history.Outcome*).
var outcomeNames = [...]string{history.OutcomeConfirmed, history.OutcomeNacked, history.OutcomeReturned,
	history.OutcomeTimedOut, history.OutcomeChannelClosed, history.OutcomeWriteFailed}

// String names the outcome, as the relay logs it (history.KeyOutcome).
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
	// heartbeat and dial are the connection's heartbeat and dial timeout
	// (Connection; 5 s each by default).
	heartbeat, dial time.Duration
	// deliveryMode is persistent (transient with the TransientQueues
	// canary).
	deliveryMode uint8
	// Canary policies, chosen in New: a confirm timeout counts as a
	// confirm (TimeoutAsConfirmed); a basic.return is ignored
	// (ReturnedAsPublished); the returns not yet claimed are dropped with
	// the channel, also those of windows still awaited (SharedReturns).
	timeoutIsConfirm, ignoreReturns, sharedReturns bool

	mu      sync.Mutex
	conn    *amqp.Connection
	wire    *heldConn // conn's TCP connection (wire.go)
	ch      *amqp.Channel
	returns *returnBox // ch's basic.returns, by window (returns.go)
	// refusing is a queue of conn's that refuses every publish (declared
	// only while the FailRefuse failpoint is armed).
	refusing string
}

// misrouteKey is a routing key nothing is bound to (the FailMisroute
// failpoint's destination).
const misrouteKey = "misrouted"

// returnBuffer bounds the messages published per confirm window: returns
// are buffered so the connection's reader never blocks on them.
const returnBuffer = 1024

// New returns a publisher to exchange at url; confirmTimeout bounds the wait
// for a batch's confirms. The TimeoutAsConfirmed, ReturnedAsPublished and
// SharedReturns canaries, if armed, break its outcome classes.
func New(url, exchange string, confirmTimeout time.Duration) *Publisher {
	return &Publisher{url: url, exchange: exchange, timeout: confirmTimeout,
		heartbeat: 5 * time.Second, dial: 5 * time.Second, deliveryMode: deliveryMode(),
		timeoutIsConfirm: canary.On(canary.TimeoutAsConfirmed), ignoreReturns: canary.On(canary.ReturnedAsPublished),
		sharedReturns: canary.On(canary.SharedReturns)}
}

func deliveryMode() uint8 {
	if canary.On(canary.TransientQueues) {
		return amqp.Transient
	}
	return amqp.Persistent
}

// Connection sets the heartbeat and dial timeout of the connections the
// publisher opens (call it before the first publish); it returns p.
func (p *Publisher) Connection(heartbeat, dial time.Duration) *Publisher {
	p.heartbeat, p.dial = heartbeat, dial
	return p
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
	// url may name several nodes: Dial reaches one that answers.
	var wire *heldConn
	conn, _, err := broker.Dial(p.url, amqp.Config{Dial: dialHeld(p.dial, &wire), Heartbeat: p.heartbeat})
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
	refusing, err := declareRefusing(ch)
	if err != nil {
		_ = conn.Close()
		return err
	}
	p.conn, p.ch, p.wire, p.refusing = conn, ch, wire, refusing
	p.returns = newReturnBox(ch.NotifyReturn(make(chan amqp.Return, returnBuffer)))
	return nil
}

func (p *Publisher) resetLocked() {
	if p.conn != nil {
		// Close waits for the broker's close-ok; on a stalled link that
		// would hold the relay until the heartbeat gives up. Let it finish
		// in the background.
		go func(c *amqp.Connection) { _ = c.Close() }(p.conn)
	}
	// The windows sent on the channel keep its returns (each holds the
	// box), unless the SharedReturns canary drops them with it.
	if p.returns != nil && p.sharedReturns {
		p.returns.drop()
	}
	p.conn, p.ch, p.wire, p.returns, p.refusing = nil, nil, nil, nil, ""
}

// declareRefusing declares, while the FailRefuse failpoint is armed, a
// queue of the channel's connection that holds nothing and refuses every
// publish (a full queue with reject-publish), and returns its name ("" when
// the failpoint is not armed). The broker names it and deletes it with the
// connection.
func declareRefusing(ch *amqp.Channel) (string, error) {
	if !killpoint.FailArmed(killpoint.FailRefuse) {
		return "", nil
	}
	q, err := ch.QueueDeclare("", false, true, true, false, amqp.Table{"x-max-length": int32(0), "x-overflow": "reject-publish"})
	if err != nil {
		return "", fmt.Errorf("declare the refusing queue: %w", err)
	}
	return q.Name, nil
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
	out := make([]Result, 0, len(msgs))
	for start := 0; start < len(msgs); start += maxWindow {
		end := min(start+maxWindow, len(msgs))
		pd, err := p.Send(ctx, msgs[start:end])
		if err != nil {
			if start == 0 {
				return nil, err
			}
			for _, m := range msgs[start:end] {
				out = append(out, Result{MessageID: m.MessageID, Outcome: WriteFailed, Err: err})
			}
			continue
		}
		out = append(out, p.Await(ctx, pd)...)
	}
	return out, nil
}

// MaxWindow bounds one Send, so two windows in flight never overflow the
// returns buffer.
const MaxWindow = returnBuffer / 2

const maxWindow = MaxWindow

// Pending is a window of publishes whose confirms are outstanding.
type Pending struct {
	msgs     []Message
	res      []Result
	dcs      []*amqp.DeferredConfirmation
	ch       *amqp.Channel
	returns  *returnBox // ch's returns: this window's are filed in why
	why      []string   // per message, why the broker returned it ("" for not); guarded by returns.mu until Await takes it
	deadline time.Time
	broken   bool
}

// Send publishes msgs (at most 512) without waiting for their confirms;
// Await collects them. A relay draining a backlog sends its next batch
// before awaiting the previous one, so the broker confirms one batch while
// the database claims the next. The error is non-nil only when nothing was
// published.
func (p *Publisher) Send(ctx context.Context, msgs []Message) (*Pending, error) {
	if len(msgs) > maxWindow {
		return nil, fmt.Errorf("send %d messages: at most %d per window", len(msgs), maxWindow)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.ensure(); err != nil {
		return nil, err
	}
	pd := &Pending{msgs: msgs, res: make([]Result, len(msgs)), dcs: make([]*amqp.DeferredConfirmation, len(msgs)), ch: p.ch, returns: p.returns}
	p.returns.add(pd)
	// The window's channel is chosen and none of it is written: a pause
	// here holds p.mu, so no earlier window's Await can replace the
	// channel until this window is out on it.
	killpoint.Hit(killpoint.RelayBeforePublish)
	// The window goes out in one write (wire.go), except under crash
	// points: there each publish is on the wire when its "after" side is
	// reached, so a crash there leaves it at the broker.
	hold := p.wire != nil && !crashpoint.Enabled()
	if hold {
		p.wire.hold()
	}
	for i, m := range msgs {
		pd.res[i].MessageID = m.MessageID
		if pd.broken {
			pd.res[i].Outcome, pd.res[i].Err = WriteFailed, errors.New("channel broken earlier in the batch")
			continue
		}
		step := "amqp:publish-" + m.RoutingKey // a crash point (system/crashpoint)
		exchange, key := p.exchange, m.RoutingKey
		if killpoint.Fail(killpoint.FailMisroute) != nil {
			key = misrouteKey
		}
		if killpoint.Fail(killpoint.FailRefuse) != nil && p.refusing != "" {
			exchange, key = "", p.refusing // the default exchange routes by queue name
		}
		crashpoint.Reach(step, crashpoint.Before)
		dc, err := p.ch.PublishWithDeferredConfirmWithContext(ctx, exchange, key, true, false, amqp.Publishing{
			MessageId:    m.MessageID,
			DeliveryMode: p.deliveryMode,
			ContentType:  "application/json",
			Headers:      m.Headers,
			Timestamp:    time.Now(),
			Body:         m.Body,
		})
		crashpoint.Reach(step, crashpoint.After)
		if err != nil {
			pd.res[i].Outcome, pd.res[i].Err = WriteFailed, fmt.Errorf("publish %s: %w", m.MessageID, err)
			pd.broken = true
			continue
		}
		pd.dcs[i] = dc
	}
	if hold {
		if err := p.wire.release(); err != nil {
			// The window's bytes did not all go out: each publish of it
			// is indefinite, and the channel is replaced after Await.
			for i := range pd.dcs {
				if pd.dcs[i] != nil {
					pd.res[i].Outcome, pd.res[i].Err = WriteFailed, fmt.Errorf("publish %s: %w", msgs[i].MessageID, err)
					pd.dcs[i] = nil
				}
			}
			pd.broken = true
		}
	}
	pd.deadline = time.Now().Add(p.timeout)
	killpoint.Hit(killpoint.RelayAfterPublish)
	return pd, nil
}

// Await waits for pd's confirms (until its deadline: the confirm timeout
// counted from its Send) and returns one Result per message in order. A
// message is Confirmed only when the broker acked it and did not return it;
// one whose channel closed before its confirm (another window may have
// replaced it) is ChannelClosed, one still unanswered at the deadline
// TimedOut: both unknown, never confirmed.
func (p *Publisher) Await(ctx context.Context, pd *Pending) []Result {
	wctx, cancel := context.WithDeadline(ctx, pd.deadline)
	defer cancel()
	res := pd.res
	reset := pd.broken
	for i, dc := range pd.dcs {
		if dc == nil {
			continue
		}
		crashpoint.Reach("amqp:confirm", crashpoint.Before)
		ack, err := dc.WaitContext(wctx)
		crashpoint.Reach("amqp:confirm", crashpoint.After)
		switch {
		case err != nil && p.timeoutIsConfirm:
			res[i].Outcome = Confirmed
			reset = true
		case err != nil:
			res[i].Outcome, res[i].Err = TimedOut, fmt.Errorf("confirm of %s: %w", pd.msgs[i].MessageID, err)
			reset = true
		case ack:
			res[i].Outcome = Confirmed
		case pd.ch.IsClosed():
			res[i].Outcome, res[i].Err = ChannelClosed, errors.New("channel closed before confirm")
			reset = true
		default:
			res[i].Outcome, res[i].Err = Nacked, errors.New("broker nacked the publish")
			// RabbitMQ 3.10 keeps nacking a channel's publishes to a
			// quorum queue whose leader died, for a minute and more after
			// the live nodes elected a new one (quorum-leader-loss: the
			// queue had its leader, every publish on the old channel was
			// nacked for 92 s); a new channel finds the leader at once.
			reset = true
		}
	}
	// Once the confirms are in, every return of this window has reached
	// its channel's box (returns.go), even when another window replaced
	// the channel meanwhile; returns of other windows are filed under them.
	why := pd.returns.take(pd)
	for i := range res {
		if why[i] != "" && res[i].Outcome == Confirmed && !p.ignoreReturns {
			res[i].Outcome, res[i].Err = Returned, fmt.Errorf("returned unroutable: %s", why[i])
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if reset && p.ch == pd.ch {
		// After a timeout or a broken channel, late confirms would come
		// on a channel in an unknown state, and after a nack the channel
		// may have lost the queue's leader: start the next batch on a new
		// channel. Windows still awaited on this one keep its returns.
		p.resetLocked()
	}
	return res
}

// Package broker owns the RabbitMQ topology (design §4–§5): one direct
// exchange and three quorum queues, every name carrying a configurable prefix
// so tests and scenarios never share them.
//
//	{prefix}.notifications          exchange (direct)
//	  ├─ "send"    → {prefix}.notifications          main: quorum, x-delivery-limit,
//	  │                                              at-least-once dead-lettering to parking,
//	  │                                              single active consumer
//	  ├─ "retry"   → {prefix}.notifications.retry    TTL, dead-letters back to "send"
//	  └─ "parking" → {prefix}.notifications.parking  no consumer; operators replay by hand
package broker

import (
	"context"
	"errors"
	"fmt"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/outboxchaos/outboxchaos/history"
	"github.com/outboxchaos/outboxchaos/system/canary"
	"github.com/outboxchaos/outboxchaos/system/config"
)

// Routing keys on the exchange. A worker logs the key it republishes to
// (history.KeyTo), so retry and parking are the history's names.
const (
	KeySend    = "send"
	KeyRetry   = history.ToRetry
	KeyParking = history.ToParking
)

// Header names carried on messages.
const (
	HeaderFailureReason = "x-failure-reason"
	HeaderRetryCount    = "x-retry-count"
)

// Names are the exchange and queue names under one prefix.
type Names struct {
	Exchange, Main, Retry, Parking string
}

// NamesFor returns the names under prefix.
func NamesFor(prefix string) Names {
	return Names{
		Exchange: prefix + ".notifications",
		Main:     prefix + ".notifications",
		Retry:    prefix + ".notifications.retry",
		Parking:  prefix + ".notifications.parking",
	}
}

// Topology is the declared shape.
type Topology struct {
	Prefix        string
	DeliveryLimit int
	RetryTTL      time.Duration
	// MaxLength bounds the main queue's messages (0: unbounded); past it
	// RabbitMQ nacks new publishes (x-overflow reject-publish).
	MaxLength int
}

// TopologyOf is the topology a configuration declares.
func TopologyOf(c config.Config) Topology {
	return Topology{Prefix: c.Prefix, DeliveryLimit: c.BrokerDeliveryLimit(), RetryTTL: c.RetryTTL, MaxLength: c.QueueMaxLength}
}

// Declare declares the exchange, the three queues and their bindings. It is
// idempotent for an unchanged topology; a changed argument on an existing
// queue fails with RabbitMQ's PRECONDITION_FAILED, reported with the queue
// name.
func (t Topology) Declare(ch *amqp.Channel) error {
	n := NamesFor(t.Prefix)
	if err := ch.ExchangeDeclare(n.Exchange, amqp.ExchangeDirect, true, false, false, false, nil); err != nil {
		return fmt.Errorf("declare exchange %s: %w", n.Exchange, err)
	}
	queues := []struct {
		name, key string
		args      amqp.Table
	}{
		{n.Main, KeySend, amqp.Table{
			"x-queue-type":              "quorum",
			"x-delivery-limit":          int64(t.DeliveryLimit),
			"x-dead-letter-exchange":    n.Exchange,
			"x-dead-letter-routing-key": KeyParking,
			"x-dead-letter-strategy":    "at-least-once",
			"x-overflow":                "reject-publish",
			"x-single-active-consumer":  true,
		}},
		{n.Retry, KeyRetry, amqp.Table{
			"x-queue-type":              "quorum",
			"x-message-ttl":             t.RetryTTL.Milliseconds(),
			"x-dead-letter-exchange":    n.Exchange,
			"x-dead-letter-routing-key": KeySend,
			"x-dead-letter-strategy":    "at-least-once",
			"x-overflow":                "reject-publish",
		}},
		{n.Parking, KeyParking, amqp.Table{"x-queue-type": "quorum"}},
	}
	if t.MaxLength > 0 {
		queues[0].args["x-max-length"] = int64(t.MaxLength)
	}
	durable := true
	if canary.On(canary.TransientQueues) {
		// The canary: classic queues that do not survive the broker.
		durable = false
		for i := range queues {
			queues[i].args = transientArgs(queues[i].args)
		}
	}
	for _, q := range queues {
		if _, err := ch.QueueDeclare(q.name, durable, false, false, false, q.args); err != nil {
			return fmt.Errorf("declare queue %s: %w", q.name, err)
		}
		if err := ch.QueueBind(q.name, q.key, n.Exchange, false, nil); err != nil {
			return fmt.Errorf("bind queue %s to %s: %w", q.name, n.Exchange, err)
		}
	}
	return nil
}

// transientArgs are a quorum queue's arguments for a classic queue: the
// TransientQueues canary's topology.
func transientArgs(a amqp.Table) amqp.Table {
	out := amqp.Table{}
	for k, v := range a {
		switch k {
		case "x-queue-type", "x-delivery-limit", "x-dead-letter-strategy":
		default:
			out[k] = v
		}
	}
	return out
}

// Depths returns the ready-message counts of main, retry and parking.
func Depths(ch *amqp.Channel, prefix string) (main, retry, parking int, err error) {
	n := NamesFor(prefix)
	out := make([]int, 3)
	for i, q := range []string{n.Main, n.Retry, n.Parking} {
		st, err := ch.QueueDeclarePassive(q, true, false, false, false, nil)
		if err != nil {
			return 0, 0, 0, fmt.Errorf("inspect queue %s: %w", q, err)
		}
		out[i] = st.Messages
	}
	return out[0], out[1], out[2], nil
}

// Delete removes the queues and exchange under prefix. Missing ones are
// fine. It opens its own connection so a broken caller channel cannot stop
// the cleanup.
func Delete(ctx context.Context, url, prefix string) error {
	conn, _, err := Dial(url, amqp.Config{Dial: amqp.DefaultDial(5 * time.Second)})
	if err != nil {
		return fmt.Errorf("dial broker to delete %s: %w", prefix, err)
	}
	defer conn.Close()
	n := NamesFor(prefix)
	var errs []error
	for _, q := range []string{n.Main, n.Retry, n.Parking} {
		ch, err := conn.Channel()
		if err != nil {
			return fmt.Errorf("open channel: %w", err)
		}
		if _, err := ch.QueueDelete(q, false, false, false); err != nil && !IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete queue %s: %w", q, err))
		}
		_ = ch.Close()
	}
	ch, err := conn.Channel()
	if err != nil {
		return fmt.Errorf("open channel: %w", err)
	}
	defer ch.Close()
	if err := ch.ExchangeDelete(n.Exchange, false, false); err != nil && !IsNotFound(err) {
		errs = append(errs, fmt.Errorf("delete exchange %s: %w", n.Exchange, err))
	}
	return errors.Join(errs...)
}

// IsNotFound reports whether err is the broker's answer that a queue or
// exchange does not exist (404), as a passive declare of a queue no
// worker declared yet gets; any other error says nothing about it.
func IsNotFound(err error) bool {
	var e *amqp.Error
	return errors.As(err, &e) && e.Code == amqp.NotFound
}

// Package watermill runs Watermill's forwarder (components/forwarder) as a
// relay under test: watermill-sql/v4 on PostgreSQL as the outbox (either
// schema mode), watermill-amqp/v3 as the publisher (confirms off, the
// default, or on).
//
// Enqueue wraps each message in the forwarder's envelope with
// forwarder.NewPublisher over a watermill-sql publisher on the business
// transaction (sql.TxFromPgx), as Watermill's outbox example does. Relay
// runs forwarder.NewForwarder from a watermill-sql subscriber to an AMQP
// publisher on our exchange. The message's UUID is its message_id
// (notification-outbox-{id}); the AMQP marshaler carries it in its
// _watermill_message_uuid header and PostprocessPublishing copies it into
// the AMQP message_id, which is what our worker reads. Nothing of
// Watermill is forked: kill-points are hit by a publisher wrapper and by a
// pgx tracer on the subscriber's pool.
package watermill

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	wamqp "github.com/ThreeDotsLabs/watermill-amqp/v3/pkg/amqp"
	wsql "github.com/ThreeDotsLabs/watermill-sql/v4/pkg/sql"
	"github.com/ThreeDotsLabs/watermill/components/forwarder"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/outboxchaos/outboxchaos/history"
	"github.com/outboxchaos/outboxchaos/peers/seam"
	"github.com/outboxchaos/outboxchaos/system/broker"
	"github.com/outboxchaos/outboxchaos/system/killpoint"
)

// Versions of the modules this package is built against (go.mod).
const Versions = "watermill v1.5.1, watermill-sql/v4 v4.1.2, watermill-amqp/v3 v3.0.2"

// Adapter is one Watermill configuration.
type Adapter struct {
	Queue   bool // PostgreSQLQueueSchema + PostgreSQLQueueOffsetsAdapter; else the default schema + offsets adapter
	Confirm bool // Publish.ConfirmDelivery
}

// Impls are the configurations under test, by name.
var Impls = map[string]Adapter{
	"watermill-offsets":         {},
	"watermill-offsets-confirm": {Confirm: true},
	"watermill-queue":           {Queue: true},
	"watermill-queue-confirm":   {Queue: true, Confirm: true},
}

// Name implements seam.Adapter.
func (a Adapter) Name() string {
	n := "watermill-offsets"
	if a.Queue {
		n = "watermill-queue"
	}
	if a.Confirm {
		n += "-confirm"
	}
	return n
}

const (
	// destTopic is the forwarded messages' topic: it becomes the AMQP
	// routing key.
	destTopic = broker.KeySend
	// pollInterval: the subscriber's poll when the table is empty.
	pollInterval = 100 * time.Millisecond
)

// Settings implements seam.Adapter.
func (a Adapter) Settings() []seam.Setting {
	schema, offsets := "DefaultPostgreSQLSchema", "DefaultPostgreSQLOffsetsAdapter"
	if a.Queue {
		schema, offsets = "PostgreSQLQueueSchema", "PostgreSQLQueueOffsetsAdapter{DeleteOnAck: false}"
	}
	return []seam.Setting{
		seam.S("versions", Versions, "pinned in go.mod"),
		seam.S("sql.SchemaAdapter", schema, "the schema mode under test"),
		seam.S("sql.OffsetsAdapter", offsets, "the matching offsets adapter"),
		seam.S("sql.SubscriberConfig.ConsumerGroup", `""`, "one forwarder group (the queue adapter supports no groups)"),
		seam.S("sql.SubscriberConfig.AckDeadline", "30s (default)", "Watermill's default"),
		seam.S("sql.SubscriberConfig.PollInterval", pollInterval.String(), "default 1s, shortened so a run takes seconds; no effect on safety"),
		seam.S("sql.SubscriberConfig.ResendInterval", "1s (default)", "Watermill's default"),
		seam.S("sql.SubscriberConfig.InitializeSchema", "true (in migrate only)", "tables created before any business transaction"),
		seam.S("SubscribeBatchSize", "100 (default)", "Watermill's default"),
		seam.S("sql.PublisherConfig.AutoInitializeSchema", "false", "forbidden inside a transaction (Watermill docs)"),
		seam.S("forwarder.Config", "defaults (ForwarderTopic forwarder_topic, CloseTimeout 30s, AckWhenCannotUnwrap false)", "Watermill's defaults"),
		seam.S("amqp config base", "NewDurableQueueConfig", "durable, persistent delivery mode"),
		seam.S("amqp Exchange", "<prefix>.notifications, direct, durable", "our exchange (declared by us already; Watermill's declare is idempotent)"),
		seam.S("amqp Publish.GenerateRoutingKey", "topic (= send)", "our routing key"),
		seam.S("amqp Publish.ConfirmDelivery", strconv.FormatBool(a.Confirm), "the publisher mode under test"),
		seam.S("amqp Publish.Mandatory", "false (default)", "Watermill's default"),
		seam.S("amqp Publish.ChannelPoolSize", "0 (default)", "Watermill's default: a channel per Publish"),
		seam.S("amqp Marshaler", "DefaultMarshaler{PostprocessPublishing: MessageId = uuid header, ContentType json}", "carries the stable id as AMQP message_id"),
		seam.S("amqp Connection.Reconnect", "DefaultReconnectConfig", "Watermill's default"),
		seam.S("message UUID", "notification-outbox-{id}", "the stable id (fits VARCHAR(36))"),
	}
}

func (a Adapter) schema() wsql.SchemaAdapter {
	if a.Queue {
		return wsql.PostgreSQLQueueSchema{}
	}
	return wsql.DefaultPostgreSQLSchema{}
}

func (a Adapter) offsets() wsql.OffsetsAdapter {
	if a.Queue {
		return wsql.PostgreSQLQueueOffsetsAdapter{}
	}
	return wsql.DefaultPostgreSQLOffsetsAdapter{}
}

// subscriber builds the forwarder's input.
func (a Adapter) subscriber(db wsql.Beginner, init bool, log watermill.LoggerAdapter) (*wsql.Subscriber, error) {
	sub, err := wsql.NewSubscriber(db, wsql.SubscriberConfig{
		SchemaAdapter: a.schema(), OffsetsAdapter: a.offsets(), PollInterval: pollInterval, InitializeSchema: init,
	}, log)
	if err != nil {
		return nil, fmt.Errorf("watermill sql subscriber: %w", err)
	}
	return sub, nil
}

// Migrate implements seam.Adapter: the subscriber creates its tables.
func (a Adapter) Migrate(ctx context.Context, env seam.Env) error {
	pool, err := seam.OpenPool(ctx, env.Cfg.PGURL, nil, 2)
	if err != nil {
		return err
	}
	defer pool.Close()
	sub, err := a.subscriber(wsql.BeginnerFromPgx(pool), true, watermill.NewSlogLogger(env.Log))
	if err != nil {
		return err
	}
	defer sub.Close()
	if err := sub.SubscribeInitialize(forwarderTopic); err != nil {
		return fmt.Errorf("initialise watermill tables: %w", err)
	}
	return nil
}

// forwarderTopic is forwarder's default topic.
const forwarderTopic = "forwarder_topic"

// Enqueue implements seam.Adapter.
func (a Adapter) Enqueue(ctx context.Context, env seam.Env, tx pgx.Tx, msgs []seam.Message) error {
	pub, err := wsql.NewPublisher(wsql.TxFromPgx(tx), wsql.PublisherConfig{SchemaAdapter: a.schema()}, watermill.NewSlogLogger(env.Log))
	if err != nil {
		return fmt.Errorf("watermill sql publisher: %w", err)
	}
	fwd := forwarder.NewPublisher(pub, forwarder.PublisherConfig{ForwarderTopic: forwarderTopic})
	var wm []*message.Message
	for _, m := range msgs {
		msg := message.NewMessage(m.MessageID, m.Body)
		msg.SetContext(ctx)
		wm = append(wm, msg)
	}
	if err := fwd.Publish(destTopic, wm...); err != nil {
		return fmt.Errorf("watermill outbox publish: %w", err)
	}
	return nil
}

// AMQPConfig is the publisher's configuration for exchange on url.
func (a Adapter) AMQPConfig(url, exchange string) wamqp.Config {
	c := wamqp.NewDurableQueueConfig(url)
	c.Exchange = wamqp.ExchangeConfig{GenerateName: wamqp.GenerateExchangeNameConstant(exchange), Type: "direct", Durable: true}
	c.Publish.GenerateRoutingKey = func(topic string) string { return topic }
	c.Publish.ConfirmDelivery = a.Confirm
	c.Marshaler = wamqp.DefaultMarshaler{PostprocessPublishing: func(p amqp.Publishing) amqp.Publishing {
		if id, ok := p.Headers[wamqp.DefaultMessageUUIDHeaderKey].(string); ok {
			p.MessageId = id
		}
		p.ContentType = "application/json"
		return p
	}}
	return c
}

// Relay implements seam.Adapter.
func (a Adapter) Relay(ctx context.Context, env seam.Env) error {
	log := watermill.NewSlogLogger(env.Log)
	pool, err := seam.OpenPool(ctx, env.Cfg.PGURL, &seam.Tracer{Rules: a.markRules()}, 0)
	if err != nil {
		return err
	}
	defer pool.Close()
	sub, err := a.subscriber(wsql.BeginnerFromPgx(pool), false, log)
	if err != nil {
		return err
	}
	pub, err := wamqp.NewPublisher(a.AMQPConfig(env.Cfg.AMQPURL, env.Exchange), log)
	if err != nil {
		return fmt.Errorf("watermill amqp publisher: %w", err)
	}
	defer pub.Close()
	f, err := forwarder.NewForwarder(sub, &killingPublisher{pub: pub, env: env}, log, forwarder.Config{ForwarderTopic: forwarderTopic})
	if err != nil {
		return fmt.Errorf("watermill forwarder: %w", err)
	}
	go func() {
		<-f.Running()
		env.Log.Info("forwarder running", history.KeyEvent, history.FirstRun)
	}()
	return f.Run(ctx)
}

// markRules hit relay.before-mark just before the subscriber writes its
// ack (the offsets upsert — not the "zero offsets" insert every subscribe
// runs, which has ON CONFLICT DO NOTHING — or the queue's acked flag).
func (a Adapter) markRules() []seam.Rule {
	match := []string{"INSERT INTO", "offset_acked", "DO UPDATE SET"}
	if a.Queue {
		match = []string{"SET acked = TRUE"}
	}
	return []seam.Rule{{Name: "mark", Match: match, Point: killpoint.RelayBeforeMark}}
}

// killingPublisher wraps the forwarder's output: relay.after-claim before
// the publish (the message was read from the outbox, nothing sent),
// relay.after-confirm once Publish returned nil (with confirms: the broker
// confirmed; without: the frame was written), and a publish event per
// message for the timeline.
type killingPublisher struct {
	pub message.Publisher
	env seam.Env
}

func (k *killingPublisher) Publish(topic string, msgs ...*message.Message) error {
	killpoint.Hit(killpoint.RelayAfterClaim)
	err := k.pub.Publish(topic, msgs...)
	outcome := "confirmed"
	if err != nil {
		outcome = "failed"
	}
	for _, m := range msgs {
		k.env.Log.Info("publish outcome", history.KeyEvent, history.Publish, history.KeyMessageID, m.UUID, history.KeyOutcome, outcome, "err", errString(err))
	}
	if err == nil {
		killpoint.Hit(killpoint.RelayAfterConfirm)
	}
	return err
}

func (k *killingPublisher) Close() error { return k.pub.Close() }

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

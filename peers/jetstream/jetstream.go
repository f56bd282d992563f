// Package jetstream is a JetStream-based outbox design run as a peer (a
// multi-replica design): an outbox relay that takes its rows with
// SELECT … FOR UPDATE SKIP LOCKED and holds the row locks across the
// publish, sets published_at in the same transaction, and publishes to
// NATS JetStream with the header Nats-Msg-Id = the outbox row's message id
// into a stream with a duplicate window; and an idempotent consumer, the
// last line of defence, that calls the vendor.
//
// Three layers can stop a duplicate, and each leaves its own evidence:
//
//   - the row lock: a second relay skips rows another holds (SKIP LOCKED),
//     so overlapping relays never publish the same row at once;
//   - broker dedup: a republish of an id JetStream still remembers (inside
//     the duplicate window) is answered with PubAck.Duplicate and not
//     stored — the relay logs it as "publish" with duplicate=true;
//   - consumer idempotency: a copy whose message id is already in the
//     processed table is acked without a send — the consumer logs
//     "already-processed".
//
// The design's own text says the window is a time-limited net: a republish
// later than the window is stored again and delivered, and only the
// consumer stops it. And the consumer's table records the send after the
// vendor call: a consumer killed between the two sends again.
//
// Through the seam: the batch jobs enqueue each message into js_outbox (id
// = notification_outbox's id) in the business transaction; relay pods run
// Relay, worker pods run Consume (instead of our worker), both reaching
// JetStream at OUTBOXCHAOS_NATS_URL, a Toxiproxy link of the run to a
// nats-server the run started. The processed table is our
// notification_histories (message_id unique), so the checker reads the
// consumer's records as it reads our inbox. The relay's kill-points:
// relay.after-claim once the rows are locked, relay.after-publish and
// relay.after-confirm once a publish returned its PubAck (a JetStream
// publish writes and awaits the ack in one call, so nothing lies between
// them), relay.before-mark before the published_at UPDATE — the last three
// inside the transaction, before its commit. The consumer's:
// worker.after-send once the vendor answered, before the record commits,
// and worker.after-result once it committed, before the ack.
package jetstream

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	js "github.com/nats-io/nats.go/jetstream"

	"github.com/outboxchaos/outboxchaos/history"
	"github.com/outboxchaos/outboxchaos/peers"
	"github.com/outboxchaos/outboxchaos/peers/seam"
)

// Versions of the modules this package is built against (go.mod); the
// server is Debian's nats-server, which the harness starts per run.
const Versions = "nats.go v1.55.0 (jetstream); nats-server v2.9.10 (Debian)"

// URLEnvVar is where the pods find JetStream (the harness sets it).
const URLEnvVar = peers.NATSURLEnvVar

// The stream, its subjects and the consumer, as migrate declares them.
const (
	Stream = "NOTIFICATIONS"
	// Subject is what the relay publishes to and the consumer reads.
	Subject = "notifications.send"
	// ProbeSubject is a subject of the stream nobody reads: the harness
	// publishes its duplicate-window probe there.
	ProbeSubject = "notifications.probe"
	Durable      = "sms-sender"
)

// Deadlines, compressed as our timers are (the design's two-minute window).
const (
	// DuplicateWindow is the stream's Duplicates: 2 min compressed 60×.
	DuplicateWindow = 2 * time.Second
	// AckWait is the consumer's: JetStream's 30 s default compressed 10×,
	// so a copy a dead consumer held comes back within the run.
	AckWait = 3 * time.Second
)

// Adapter is the JetStream design's relay and consumer.
type Adapter struct{}

// Name implements seam.Adapter.
func (Adapter) Name() string { return "jetstream" }

// Settings implements seam.Adapter.
func (Adapter) Settings() []seam.Setting {
	return []seam.Setting{
		seam.S("modules", Versions, "go.mod; the server is started per run on a private port"),
		seam.S("claim", "SELECT … FROM js_outbox WHERE published_at IS NULL ORDER BY id LIMIT batch FOR UPDATE SKIP LOCKED", "design §7: the row locks are held across the publish"),
		seam.S("mark", "UPDATE js_outbox SET published_at = now() in the same transaction, then COMMIT", "design §7: a crash after the publish and before the commit republishes"),
		seam.S("publish", "jetstream.PublishMsg (writes and awaits the PubAck), Nats-Msg-Id = notification-outbox-{id}", "design §7: broker-side dedup by message id"),
		seam.S("publish-timeout", "confirm-timeout (600 ms; nats.go's 5 s compressed)", "the scenarios' compression"),
		seam.S("stream", Stream+" subjects notifications.>, file storage, 1 replica, duplicates "+DuplicateWindow.String(), "design §7's 2-minute window compressed 60×"),
		seam.S("consumer", "durable pull "+Durable+", ack explicit, ack wait "+AckWait.String()+", one message at a time", "JetStream's 30 s ack wait compressed; one at a time as our worker's prefetch 1"),
		seam.S("idempotency", "INSERT the message id into notification_histories ON CONFLICT DO NOTHING, in a transaction held across the vendor call; committed after it; acked after the commit", "consumer idempotency as the last line (design §7)"),
		seam.S("interval", "relay-interval (100 ms compressed)", "the relay's poll, compressed"),
	}
}

// migrateLock serialises the peer's schema creation (the design's fix for
// concurrent CREATE TABLE IF NOT EXISTS).
const migrateLock = 4004

// Migrate implements seam.Adapter: the peer's outbox, the stream and the
// durable consumer.
func (Adapter) Migrate(ctx context.Context, env seam.Env) error {
	pool, err := seam.OpenPool(ctx, env.Cfg.PGURL, nil, 2)
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrateLock); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS js_outbox (
			id           BIGINT PRIMARY KEY,
			subject      TEXT NOT NULL,
			message_id   TEXT NOT NULL,
			payload      BYTEA NOT NULL,
			created_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
			published_at TIMESTAMPTZ)`)
		return err
	}); err != nil {
		return fmt.Errorf("create js_outbox: %w", err)
	}
	nc, s, err := connect(env, "migrate")
	if err != nil {
		return err
	}
	defer nc.Close()
	if _, err := s.CreateOrUpdateStream(ctx, js.StreamConfig{Name: Stream, Subjects: []string{"notifications.>"},
		Storage: js.FileStorage, Replicas: 1, Duplicates: DuplicateWindow}); err != nil {
		return fmt.Errorf("create stream %s: %w", Stream, err)
	}
	if _, err := s.CreateOrUpdateConsumer(ctx, Stream, js.ConsumerConfig{Durable: Durable, AckPolicy: js.AckExplicitPolicy,
		AckWait: AckWait, FilterSubject: Subject, MaxDeliver: -1, DeliverPolicy: js.DeliverAllPolicy}); err != nil {
		return fmt.Errorf("create consumer %s: %w", Durable, err)
	}
	return nil
}

// Enqueue implements seam.Adapter: one js_outbox row per message, in the
// business transaction.
func (Adapter) Enqueue(ctx context.Context, _ seam.Env, tx pgx.Tx, msgs []seam.Message) error {
	for _, m := range msgs {
		if _, err := tx.Exec(ctx, `INSERT INTO js_outbox (id, subject, message_id, payload) VALUES ($1, $2, $3, $4) ON CONFLICT (id) DO NOTHING`,
			m.OutboxID, Subject, m.MessageID, m.Body); err != nil {
			return fmt.Errorf("enqueue %s into js_outbox: %w", m.MessageID, err)
		}
	}
	return nil
}

// connect reaches JetStream at URLEnvVar, reconnecting for ever.
func connect(env seam.Env, role string) (*nats.Conn, js.JetStream, error) {
	url := os.Getenv(URLEnvVar)
	if url == "" {
		return nil, nil, fmt.Errorf("%s is not set: the harness starts JetStream for this peer", URLEnvVar)
	}
	log := env.Log
	nc, err := nats.Connect(url, nats.Name(env.Cfg.Instance+"/"+role), nats.Timeout(2*time.Second),
		nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond), nats.RetryOnFailedConnect(false),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil { // nil: our own Close
				log.Warn("JetStream connection lost", history.KeyEvent, history.Disconnect, "err", err.Error())
			}
		}),
		nats.ReconnectHandler(func(*nats.Conn) { log.Info("JetStream connection back", history.KeyEvent, history.Reconnect) }))
	if err != nil {
		return nil, nil, fmt.Errorf("connect to JetStream: %w", err)
	}
	s, err := js.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("JetStream context: %w", err)
	}
	return nc, s, nil
}

// outcomeOf names a failed publish as the contract's publish events do.
func outcomeOf(err error) string {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) {
		return "timed-out"
	}
	return "failed"
}

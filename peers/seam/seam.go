// Package seam is the "relay under test" seam: what any outbox relay —
// ours or a peer's (Watermill's forwarder, River) — must offer so the
// harness can run it as pods, crash it at named points and judge the
// end-to-end result with our worker, inbox and checker unchanged.
//
// A peer keeps its own outbox. Our batch jobs still write
// notification_outbox (the intents the checker counts), and in the same
// business transaction the adapter enqueues one message per inserted row
// into the peer's outbox (Adapter.Enqueue). The peer's relay then carries
// each message to our exchange with routing key "send",
// message_id notification-outbox-{id} and the body our relay would
// publish (Message), so the worker cannot tell who relayed it.
//
// Kill-points are hit by wrappers around the peer's database handle (a pgx
// tracer, Tracer) and its publisher, never by forking peer code; Main is the
// command line every peer binary shares (migrate, enqueue, relay).
package seam

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/outboxchaos/outboxchaos/system/broker"
	"github.com/outboxchaos/outboxchaos/system/notification"
)

// Message is one notification as a relay must deliver it.
type Message struct {
	OutboxID   int64
	MessageID  string // notification-outbox-{id}: stable across every republish
	RoutingKey string // broker.KeySend
	Body       []byte // the JSON payload with outbox_id and dedup_key, as our relay publishes it
}

// Setting is one configuration value of a peer, recorded in the report.
type Setting struct {
	Name, Value, Why string
}

// Adapter is one relay implementation under test.
type Adapter interface {
	// Name is the implementation's name in the matrix (watermill-offsets, river0512 …).
	Name() string
	// Settings lists every setting the adapter chose, and why.
	Settings() []Setting
	// Migrate creates the peer's own tables in the run's schema.
	Migrate(ctx context.Context, env Env) error
	// Enqueue writes msgs into the peer's outbox inside the business
	// transaction tx.
	Enqueue(ctx context.Context, env Env, tx pgx.Tx, msgs []Message) error
	// Relay runs the peer's relay until ctx is done.
	Relay(ctx context.Context, env Env) error
}

// Consumer is a peer that brings its own consumer (a JetStream relay's idempotent
// JetStream consumer): the run's worker pods run Consume instead of our
// worker, and it calls the vendor as our worker does, so the handset
// ledger judges it.
type Consumer interface {
	// Consume runs the peer's consumer until ctx is done.
	Consume(ctx context.Context, env Env) error
}

// Messages reads, inside tx, the outbox rows of dedupKeys and returns the
// message each must become (in id order).
func Messages(ctx context.Context, tx pgx.Tx, dedupKeys []string) ([]Message, error) {
	rows, err := tx.Query(ctx, `SELECT id, dedup_key, payload FROM notification_outbox WHERE dedup_key = ANY($1) ORDER BY id`, dedupKeys)
	if err != nil {
		return nil, fmt.Errorf("read the inserted outbox rows: %w", err)
	}
	out, err := scanMessages(rows)
	if err != nil {
		return nil, fmt.Errorf("read the inserted outbox rows: %w", err)
	}
	return out, nil
}

// scanMessages builds the message of every (id, dedup_key, payload) row
// and closes rows.
func scanMessages(rows pgx.Rows) ([]Message, error) {
	defer rows.Close()
	var out []Message
	for rows.Next() {
		var id int64
		var key string
		var raw []byte
		if err := rows.Scan(&id, &key, &raw); err != nil {
			return nil, fmt.Errorf("scan outbox row: %w", err)
		}
		m, err := NewMessage(id, key, raw)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// NewMessage builds the message of outbox row id from its stored payload,
// exactly as our relay does (OutboxID and DedupKey set).
func NewMessage(id int64, dedupKey string, payload []byte) (Message, error) {
	var p notification.Payload
	if err := json.Unmarshal(payload, &p); err != nil {
		return Message{}, fmt.Errorf("decode payload of outbox row %d: %w", id, err)
	}
	p.OutboxID, p.DedupKey = id, dedupKey
	body, err := json.Marshal(p)
	if err != nil {
		return Message{}, fmt.Errorf("encode message of outbox row %d: %w", id, err)
	}
	return Message{OutboxID: id, MessageID: notification.MessageID(id), RoutingKey: broker.KeySend, Body: body}, nil
}

// S is a Setting.
func S(name, value, why string) Setting { return Setting{Name: name, Value: value, Why: why} }

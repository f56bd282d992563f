// Package peers names the relay implementations under test and reads, in
// plain SQL, what each one thinks became of every message: the harness
// folds that into the outbox rows it hands the checker, so a message a
// peer still owes is stuck and one it gave up on is a loss, whichever
// relay ran. It imports no peer library (River builds in nested modules,
// peers/river).
package peers

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Ours is our own relay (system/relay) through the same seam.
const Ours = "ours"

// Impls lists every implementation, ours first, and the binary that runs it
// (bin/<binary>; "" for outboxchaos itself).
var Impls = []struct{ Name, Binary string }{
	{Ours, ""},
	{"watermill-offsets", "peer-watermill"},
	{"watermill-offsets-confirm", "peer-watermill"},
	{"watermill-queue", "peer-watermill"},
	{"watermill-queue-confirm", "peer-watermill"},
	{"river047", "peer-river047"},
	{"river0512", "peer-river0512"},
}

// Binary returns the binary of impl, or an error naming the valid ones.
func Binary(impl string) (string, error) {
	var names []string
	for _, i := range Impls {
		if i.Name == impl {
			return i.Binary, nil
		}
		names = append(names, i.Name)
	}
	return "", fmt.Errorf("unknown implementation %q (known: %s)", impl, strings.Join(names, ", "))
}

// The peer's view of a message, in the outbox's words.
const (
	Published = "PUBLISHED" // the peer marked it done
	Pending   = "PENDING"   // the peer still owes it
	Failed    = "FAILED"    // the peer gave up on it
)

// statusSQL returns (outbox id, status) for every message in the peer's
// outbox.
func statusSQL(impl string) (string, error) {
	switch {
	case strings.HasPrefix(impl, "watermill-offsets"):
		// Acked: at or before the consumer group's (transaction, offset)
		// cursor, as the subscriber's select reads it.
		return `SELECT substring(m.payload->>'uuid' from 'notification-outbox-(\d+)')::bigint,
			CASE WHEN o.consumer_group IS NOT NULL AND (m.transaction_id < o.last_processed_transaction_id
				OR (m.transaction_id = o.last_processed_transaction_id AND m."offset" <= o.offset_acked))
			THEN 'PUBLISHED' ELSE 'PENDING' END
			FROM "watermill_forwarder_topic" m
			LEFT JOIN "watermill_offsets_forwarder_topic" o ON o.consumer_group = ''`, nil
	case strings.HasPrefix(impl, "watermill-queue"):
		return `SELECT substring(payload->>'uuid' from 'notification-outbox-(\d+)')::bigint,
			CASE WHEN acked THEN 'PUBLISHED' ELSE 'PENDING' END FROM "watermill_forwarder_topic"`, nil
	case strings.HasPrefix(impl, "river"):
		return `SELECT (args->>'outbox_id')::bigint,
			CASE state::text WHEN 'completed' THEN 'PUBLISHED' WHEN 'discarded' THEN 'FAILED' WHEN 'cancelled' THEN 'FAILED'
			ELSE 'PENDING' END FROM river_job`, nil
	}
	return "", fmt.Errorf("no status query for implementation %q", impl)
}

// Querier runs a query (a pool or a connection).
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// Status returns the peer's view of each outbox id it holds a message for.
// A table not created yet reads as empty. With several messages for one
// id, PUBLISHED wins over PENDING over FAILED.
func Status(ctx context.Context, db Querier, impl string) (map[int64]string, error) {
	q, err := statusSQL(impl)
	if err != nil {
		return nil, err
	}
	rows, err := db.Query(ctx, q)
	if err != nil {
		if strings.Contains(err.Error(), "does not exist") {
			return map[int64]string{}, nil
		}
		return nil, fmt.Errorf("read %s's outbox: %w", impl, err)
	}
	defer rows.Close()
	rank := map[string]int{Failed: 0, Pending: 1, Published: 2}
	out := map[int64]string{}
	for rows.Next() {
		var id *int64
		var st string
		if err := rows.Scan(&id, &st); err != nil {
			return nil, fmt.Errorf("scan %s's outbox: %w", impl, err)
		}
		if id == nil {
			continue
		}
		if old, ok := out[*id]; !ok || rank[st] > rank[old] {
			out[*id] = st
		}
	}
	if err := rows.Err(); err != nil {
		if strings.Contains(err.Error(), "does not exist") {
			return map[int64]string{}, nil
		}
		return nil, fmt.Errorf("read %s's outbox: %w", impl, err)
	}
	return out, nil
}

// Names lists the implementations' names, sorted.
func Names() []string {
	var out []string
	for _, i := range Impls {
		out = append(out, i.Name)
	}
	sort.Strings(out)
	return out
}

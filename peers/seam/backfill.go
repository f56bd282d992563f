package seam

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// backfillChunk is how many messages one transaction of Backfill enqueues.
const backfillChunk = 1000

// Backfill enqueues the notification_outbox rows from..to into a's outbox,
// backfillChunk per transaction, and returns how many it enqueued: the
// benchmark's backlog (bench/peerbench), written before its clock starts.
func Backfill(ctx context.Context, pool *pgxpool.Pool, a Adapter, env Env, from, to int64) (int, error) {
	n := 0
	for lo := from; lo <= to; lo += backfillChunk {
		hi := min(lo+backfillChunk-1, to)
		if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			rows, err := tx.Query(ctx, `SELECT id, dedup_key, payload FROM notification_outbox WHERE id BETWEEN $1 AND $2 ORDER BY id`, lo, hi)
			if err != nil {
				return fmt.Errorf("read outbox rows %d..%d: %w", lo, hi, err)
			}
			msgs, err := scanMessages(rows)
			if err != nil {
				return fmt.Errorf("read outbox rows %d..%d: %w", lo, hi, err)
			}
			n += len(msgs)
			return a.Enqueue(ctx, env, tx, msgs)
		}); err != nil {
			return n, fmt.Errorf("backfill %s: %w", a.Name(), err)
		}
	}
	return n, nil
}

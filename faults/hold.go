package faults

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxchaos/outboxchaos/rig"
	"github.com/outboxchaos/outboxchaos/system/schema"
)

// Hold is a database transaction the harness keeps open to hold pods at a
// lock: a barrier that makes an overlap certain instead of likely. While it
// is held, a pod that needs one of its locks waits in PostgreSQL, where the
// harness can see it (Waiters); Release lets them all go at once.
type Hold struct {
	pool     *pgxpool.Pool
	conn     *pgxpool.Conn
	tx       pgx.Tx
	pid      uint32
	what     string
	unlock   string // SQL run after the commit (a session lock), if any
	released bool
	// postmaster is the server's start time when the hold was taken.
	postmaster time.Time
}

// holdRows opens a transaction that row-locks the first n PENDING outbox
// rows in the relay's claim order, as a relay run part-way through its claim
// does.
func holdRows(ctx context.Context, pool *pgxpool.Pool, n int) (*Hold, []int64, error) {
	h, err := hold(ctx, pool, fmt.Sprintf("row locks on the first %d PENDING outbox rows", n), true)
	if err != nil {
		return nil, nil, err
	}
	rows, err := h.tx.Query(ctx, `SELECT id FROM notification_outbox WHERE status = 'PENDING'
		ORDER BY next_attempt_at, id LIMIT $1 FOR UPDATE`, n)
	if err == nil {
		var ids []int64
		ids, err = pgx.CollectRows(rows, pgx.RowTo[int64])
		if err == nil && len(ids) == n {
			return h, ids, nil
		}
		if err == nil {
			err = fmt.Errorf("want %d PENDING rows to lock, found %d", n, len(ids))
		}
	}
	_ = h.Release(context.WithoutCancel(ctx))
	return nil, nil, fmt.Errorf("hold outbox rows: %w", err)
}

// holdMigration plays a migrator part-way through its migration: it takes
// the migration's advisory lock, as Migrate does, and runs the first
// migration statement in a transaction it keeps open. A migrator that takes
// the lock waits for it; one that does not runs into the half-created table.
func holdMigration(ctx context.Context, pool *pgxpool.Pool) (*Hold, error) {
	h, err := hold(ctx, pool, "the migration lock and an uncommitted "+schema.FirstTable, false)
	if err != nil {
		return nil, err
	}
	if _, err := h.conn.Exec(ctx, `SELECT pg_advisory_lock(`+schema.LockKey+`)`); err != nil {
		_ = h.Release(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("take the migration lock: %w", err)
	}
	h.unlock = `SELECT pg_advisory_unlock(` + schema.LockKey + `)`
	if h.tx, err = h.conn.Begin(ctx); err == nil {
		_, err = h.tx.Exec(ctx, schema.FirstStatement())
	}
	if err != nil {
		_ = h.Release(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("start the held migration: %w", err)
	}
	return h, nil
}

// hold acquires a dedicated connection and, if begin, begins a transaction
// on it.
func hold(ctx context.Context, pool *pgxpool.Pool, what string, begin bool) (*Hold, error) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("acquire a connection to hold %s: %w", what, err)
	}
	h := &Hold{pool: pool, conn: conn, what: what, pid: conn.Conn().PgConn().PID()}
	if err := conn.QueryRow(ctx, `SELECT pg_postmaster_start_time()`).Scan(&h.postmaster); err != nil {
		conn.Release()
		return nil, fmt.Errorf("read the server's start time to hold %s: %w", what, err)
	}
	if begin {
		if h.tx, err = conn.Begin(ctx); err != nil {
			conn.Release()
			return nil, fmt.Errorf("begin the transaction holding %s: %w", what, err)
		}
	}
	return h, nil
}

// Waiters counts the backends waiting, directly or behind another waiter,
// on a lock this hold owns.
func (h *Hold) Waiters(ctx context.Context) (int, error) {
	rows, err := h.pool.Query(ctx, `SELECT pid, pg_blocking_pids(pid) FROM pg_stat_activity WHERE wait_event_type = 'Lock'`)
	if err != nil {
		return 0, fmt.Errorf("read lock waits: %w", err)
	}
	blockers := map[uint32][]uint32{}
	for rows.Next() {
		var pid uint32
		var by []uint32
		if err := rows.Scan(&pid, &by); err != nil {
			rows.Close()
			return 0, fmt.Errorf("read lock waits: %w", err)
		}
		blockers[pid] = by
	}
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("read lock waits: %w", err)
	}
	// A waiter behind a waiter is held by this transaction too.
	held := map[uint32]bool{h.pid: true}
	for grew := true; grew; {
		grew = false
		for pid, by := range blockers {
			if held[pid] {
				continue
			}
			for _, b := range by {
				if held[b] {
					held[pid], grew = true, true
					break
				}
			}
		}
	}
	return len(held) - 1, nil
}

// Release commits the transaction (and drops a session lock), letting every
// waiter go. Safe to call twice.
func (h *Hold) Release(ctx context.Context) error {
	if h == nil || h.released {
		return nil
	}
	h.released = true
	defer h.conn.Release()
	var err error
	if h.tx != nil {
		if err = h.tx.Commit(ctx); err != nil {
			err = fmt.Errorf("release %s: %w", h.what, err)
		}
	}
	if h.unlock != "" {
		if _, uerr := h.conn.Exec(ctx, h.unlock); uerr != nil && err == nil {
			err = fmt.Errorf("release %s: %w", h.what, uerr)
		}
	}
	return err
}

// PID is the backend process holding the locks.
func (h *Hold) PID() uint32 { return h.pid }

// holdTable opens a transaction holding an EXCLUSIVE lock on a table:
// reads go on, every write (a claim UPDATE, a claim INSERT) waits in
// PostgreSQL until the lock goes.
func holdTable(ctx context.Context, pool *pgxpool.Pool, table string) (*Hold, error) {
	h, err := hold(ctx, pool, "an EXCLUSIVE lock on "+table, true)
	if err != nil {
		return nil, err
	}
	if _, err := h.tx.Exec(ctx, "LOCK TABLE "+pgx.Identifier{table}.Sanitize()+" IN EXCLUSIVE MODE"); err != nil {
		_ = h.Release(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("lock table %s: %w", table, err)
	}
	return h, nil
}

// holdInboxRow opens a transaction row-locking the inbox row of one
// message: the worker's result UPDATE of it waits until the lock goes.
func holdInboxRow(ctx context.Context, pool *pgxpool.Pool, messageID string) (*Hold, error) {
	h, err := hold(ctx, pool, "a row lock on the inbox row of "+messageID, true)
	if err != nil {
		return nil, err
	}
	var id string
	err = h.tx.QueryRow(ctx, `SELECT message_id FROM notification_histories WHERE message_id = $1 FOR UPDATE`, messageID).Scan(&id)
	if err != nil {
		_ = h.Release(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("lock the inbox row of %s: %w", messageID, err)
	}
	return h, nil
}

// ReleaseAfterCrash releases the hold, but a hold whose backend died with
// its database (an infrastructure crash) has nothing left to release: the
// crash rolled its transaction back. Its failed commit is then no error.
func (h *Hold) ReleaseAfterCrash(ctx context.Context) error {
	if h == nil || h.released {
		return nil
	}
	err := h.Release(ctx)
	if err == nil {
		return nil
	}
	// A postmaster started after the hold was taken: the server the hold
	// lived in crashed (a backend's pid says nothing: a restarted
	// container hands the same small pids out again).
	// The server may still be starting again (its container's restart is
	// another fault's recovery): wait until it answers, then ask.
	var restarted bool
	werr := rig.WaitFor(ctx, holdServerWait, "the database back after its crash", func(ctx context.Context) (bool, error) {
		qerr := h.pool.QueryRow(ctx, `SELECT pg_postmaster_start_time() > $1`, h.postmaster).Scan(&restarted)
		return qerr == nil, qerr
	})
	if werr == nil && restarted {
		return nil
	}
	return err
}

// holdServerWait bounds how long a hold released after a crash waits for
// its database to answer again.
const holdServerWait = 90 * time.Second

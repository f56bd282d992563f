// Package schema owns the database layout: the outbox
// (notification_outbox), the inbox (notification_histories, with its partial
// UNIQUE index on message_id built CONCURRENTLY), the scheduler lock table
// used by cleanup, and the business tables the batch jobs read.
//
// Migrate serialises schema creation with pg_advisory_lock, keyed by the
// current schema: several instances starting at once against one database
// would otherwise race in CREATE TABLE IF NOT EXISTS and fail with SQLSTATE
// 23505 on pg_type_typname_nsp_index (design §7).
package schema

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// statements are run in order; each is idempotent. The CONCURRENTLY index
// cannot run inside a transaction, so nothing here does.
var statements = []string{
	`CREATE TABLE IF NOT EXISTS members (
		id          BIGINT PRIMARY KEY,
		name        TEXT NOT NULL,
		phone       TEXT NOT NULL,
		sms_consent BOOLEAN NOT NULL DEFAULT true,
		active      BOOLEAN NOT NULL DEFAULT true
	)`,
	`CREATE TABLE IF NOT EXISTS registered_numbers (
		phone TEXT PRIMARY KEY
	)`,
	`CREATE TABLE IF NOT EXISTS grade_histories (
		id        BIGINT PRIMARY KEY,
		member_id BIGINT NOT NULL,
		grade     TEXT NOT NULL,
		month     TEXT NOT NULL
	)`,
	`CREATE TABLE IF NOT EXISTS award_winnings (
		id        BIGINT PRIMARY KEY,
		member_id BIGINT NOT NULL,
		award     TEXT NOT NULL,
		deadline  DATE NOT NULL
	)`,
	`CREATE TABLE IF NOT EXISTS mission_targets (
		day       DATE NOT NULL,
		member_id BIGINT NOT NULL,
		PRIMARY KEY (day, member_id)
	)`,
	`CREATE TABLE IF NOT EXISTS lock_in_targets (
		month     TEXT NOT NULL,
		member_id BIGINT NOT NULL,
		PRIMARY KEY (month, member_id)
	)`,
	`CREATE TABLE IF NOT EXISTS anniversary_targets (
		member_id BIGINT NOT NULL,
		year      INT NOT NULL,
		PRIMARY KEY (member_id, year)
	)`,
	`CREATE TABLE IF NOT EXISTS coupons (
		id        BIGSERIAL PRIMARY KEY,
		member_id BIGINT NOT NULL,
		year      INT NOT NULL,
		issued_at TIMESTAMPTZ NOT NULL,
		UNIQUE (member_id, year)
	)`,
	`CREATE TABLE IF NOT EXISTS notification_outbox (
		id              BIGSERIAL PRIMARY KEY,
		dedup_key       TEXT NOT NULL,
		kind            TEXT NOT NULL,
		payload         JSONB NOT NULL,
		advertising     BOOLEAN NOT NULL DEFAULT false,
		scheduled_date  DATE NOT NULL,
		status          TEXT NOT NULL DEFAULT 'PENDING',
		attempts        INT NOT NULL DEFAULT 0,
		next_attempt_at TIMESTAMPTZ NOT NULL,
		claimed_by      TEXT,
		claimed_until   TIMESTAMPTZ,
		status_reason   TEXT,
		last_error      TEXT,
		created_at      TIMESTAMPTZ NOT NULL,
		updated_at      TIMESTAMPTZ NOT NULL,
		published_at    TIMESTAMPTZ,
		CONSTRAINT notification_outbox_dedup_key_uq UNIQUE (dedup_key),
		CONSTRAINT notification_outbox_status_ck CHECK (status IN
			('PENDING','PUBLISHING','PUBLISHED','SKIPPED','FAILED','EXPIRED'))
	)`,
	`CREATE INDEX IF NOT EXISTS notification_outbox_pending_idx
		ON notification_outbox (next_attempt_at, id) WHERE status = 'PENDING'`,
	`CREATE INDEX IF NOT EXISTS notification_outbox_publishing_idx
		ON notification_outbox (claimed_until) WHERE status = 'PUBLISHING'`,
	`CREATE TABLE IF NOT EXISTS notification_histories (
		id          BIGSERIAL PRIMARY KEY,
		message_id  VARCHAR(100),
		outbox_id   BIGINT,
		dedup_key   TEXT,
		kind        TEXT,
		phone       TEXT,
		status      TEXT NOT NULL,
		vendor_code TEXT,
		error       TEXT,
		created_at  TIMESTAMPTZ NOT NULL, -- the latest claim (the first, or a re-send's)
		updated_at  TIMESTAMPTZ NOT NULL,
		-- Reconciliation (system/reconcile): lookups made, when to look
		-- again, the last answer, re-sends, and how the row was settled.
		reconcile_tries   INT NOT NULL DEFAULT 0,
		reconcile_next_at TIMESTAMPTZ,
		reconcile_last    TEXT,
		resends           INT NOT NULL DEFAULT 0,
		settled           TEXT,
		settled_at        TIMESTAMPTZ,
		CONSTRAINT notification_histories_status_ck CHECK (status IN ('SENDING','RESENDING','SENT','FAILED','ERROR'))
	)`,
	// A CREATE INDEX CONCURRENTLY that died half-way leaves an INVALID
	// index that IF NOT EXISTS would skip: drop it so the guard is rebuilt.
	`DO $$ BEGIN
		IF EXISTS (SELECT 1 FROM pg_index i
		             JOIN pg_class c ON c.oid = i.indexrelid
		             JOIN pg_namespace n ON n.oid = c.relnamespace
		            WHERE c.relname = 'notification_histories_message_id_uq'
		              AND n.nspname = current_schema() AND NOT i.indisvalid) THEN
			EXECUTE format('DROP INDEX %I.notification_histories_message_id_uq', current_schema());
		END IF;
	END $$`,
	`CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS notification_histories_message_id_uq
		ON notification_histories (message_id) WHERE message_id IS NOT NULL`,
	`CREATE INDEX IF NOT EXISTS notification_histories_sending_idx
		ON notification_histories (created_at) WHERE status IN ('SENDING', 'RESENDING')`,
	`CREATE INDEX IF NOT EXISTS notification_histories_unsettled_idx
		ON notification_histories (id) WHERE status = 'ERROR' AND settled IS NULL`,
	`CREATE TABLE IF NOT EXISTS scheduler_locks (
		name         TEXT PRIMARY KEY,
		locked_until TIMESTAMPTZ NOT NULL,
		locked_at    TIMESTAMPTZ NOT NULL,
		locked_by    TEXT NOT NULL
	)`,
}

// Migrate creates every table and index, holding a session advisory lock
// keyed by the current schema for the whole run.
func Migrate(ctx context.Context, conn *pgx.Conn) error {
	return migrate(ctx, conn, true)
}

// MigrateUnlocked runs the same statements without the advisory lock. It
// exists only to prove, in tests, that the lock is needed.
func MigrateUnlocked(ctx context.Context, conn *pgx.Conn) error {
	return migrate(ctx, conn, false)
}

// LockKey is the SQL expression of the migration's advisory lock key: one
// lock per schema.
const LockKey = `hashtextextended('outboxchaos.migrate:' || current_schema(), 0)`

func migrate(ctx context.Context, conn *pgx.Conn, lock bool) (err error) {
	if lock {
		if err := takeLock(ctx, conn); err != nil {
			return err
		}
		defer func() {
			// Use a fresh context: the caller's may be cancelled, and a
			// session lock left behind would block every later migrator.
			if _, uerr := conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock(`+LockKey+`)`); uerr != nil && err == nil {
				err = fmt.Errorf("release migration lock: %w", uerr)
			}
		}()
	}
	for i, s := range statements {
		if _, err := conn.Exec(ctx, s); err != nil {
			return fmt.Errorf("migration step %d: %w", i+1, err)
		}
	}
	return nil
}

// lockPoll is how often a waiting migrator retries the lock.
const lockPoll = 50 * time.Millisecond

// takeLock polls pg_try_advisory_lock instead of blocking in
// pg_advisory_lock: CREATE INDEX CONCURRENTLY waits for every transaction
// with an older snapshot, and a migrator blocked inside pg_advisory_lock is
// such a transaction while it waits for the lock the index builder holds —
// a deadlock PostgreSQL breaks by failing one of them (SQLSTATE 40P01).
func takeLock(ctx context.Context, conn *pgx.Conn) error {
	for {
		var ok bool
		if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock(`+LockKey+`)`).Scan(&ok); err != nil {
			return fmt.Errorf("take migration lock: %w", err)
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("take migration lock: %w", ctx.Err())
		case <-time.After(lockPoll):
		}
	}
}

// FirstTable is the table the first migration statement creates.
const FirstTable = "members"

// FirstStatement is the first migration statement (CREATE TABLE IF NOT
// EXISTS members): the harness runs it in a held transaction to stand in for
// a migrator part-way through.
func FirstStatement() string { return statements[0] }

// Tables lists the tables Migrate creates, for cleanup and reports.
var Tables = []string{
	"members", "registered_numbers", "grade_histories", "award_winnings", "mission_targets",
	"lock_in_targets", "anniversary_targets", "coupons", "notification_outbox",
	"notification_histories", "scheduler_locks",
}

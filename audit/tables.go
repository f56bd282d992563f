package audit

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/outboxchaos/outboxchaos/system/preflight"
)

// The tables the audit reads, by the design's names; members is optional.
const (
	OutboxTable  = "notification_outbox"
	InboxTable   = "notification_histories"
	MembersTable = "members"
)

// Query says which database, schema and time range to read.
type Query struct {
	URL    string
	Schema string
	// From and To bound the outbox rows audited by created_at (From
	// inclusive, To exclusive; zero: unbounded). Inbox rows and report
	// lines follow their outbox rows.
	From, To time.Time
	// AllowWriteRole lets a role that may write the audited tables run
	// the audit (its transaction is read-only all the same).
	AllowWriteRole bool
	// Names maps the design's table and column names to the schema's
	// own (nil: the design's).
	Names Names
}

// reader is the audit's one REPEATABLE READ, READ ONLY transaction: every
// chunk of rows it reads comes from the same snapshot.
type reader struct {
	conn *pgx.Conn
	tx   pgx.Tx
	q    Query
	// now is the snapshot's time; members whether the schema has a
	// members table the role may read.
	now     time.Time
	members bool
}

// openReader checks the database and its tables (see checkTables) and
// begins the transaction.
func openReader(ctx context.Context, q Query) (*reader, error) {
	if err := preflight.Postgres(ctx, q.URL); err != nil {
		return nil, notJudged(fmt.Errorf("cannot audit: %w", err))
	}
	conn, err := pgx.Connect(ctx, q.URL)
	if err != nil {
		return nil, notJudged(fmt.Errorf("connect to Postgres: %w", err))
	}
	r := &reader{conn: conn, q: q}
	if err := checkTables(ctx, conn, q); err != nil {
		r.close(ctx)
		return nil, err
	}
	if r.tx, err = conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}); err != nil {
		r.close(ctx)
		return nil, notJudged(fmt.Errorf("begin the read-only transaction: %w", err))
	}
	if err := r.tx.QueryRow(ctx, `SELECT transaction_timestamp()`).Scan(&r.now); err != nil {
		r.close(ctx)
		return nil, notJudged(fmt.Errorf("read the snapshot's time: %w", err))
	}
	if r.members, err = membersReadable(ctx, r.tx, q); err != nil {
		r.close(ctx)
		return nil, notJudged(err)
	}
	return r, nil
}

func (r *reader) close(ctx context.Context) {
	ctx = context.WithoutCancel(ctx)
	if r.tx != nil {
		_ = r.tx.Rollback(ctx)
	}
	_ = r.conn.Close(ctx)
}

// idBounds returns the outbox ids the audit reads lie in [lo, hi): those
// of the rows in range and those the inbox rows in range name.
func (r *reader) idBounds(ctx context.Context) (lo, hi int64, err error) {
	var oLo, oHi, iLo, iHi *int64
	err = r.tx.QueryRow(ctx, `SELECT min(id), max(id) FROM `+r.q.Names.from(r.q.Schema, "outbox")+` WHERE `+inRange("created_at"), bounds(r.q)...).Scan(&oLo, &oHi)
	if err != nil {
		return 0, 0, notJudged(fmt.Errorf("read %s's ids: %w", OutboxTable, err))
	}
	where, args := r.inboxWhere()
	err = r.tx.QueryRow(ctx, `SELECT min(outbox_id), max(outbox_id) FROM `+r.q.Names.from(r.q.Schema, "inbox")+` WHERE outbox_id > 0 AND (`+where+`)`, args...).Scan(&iLo, &iHi)
	if err != nil {
		return 0, 0, notJudged(fmt.Errorf("read %s's outbox ids: %w", InboxTable, err))
	}
	lo, hi = 1, 1
	first := true
	for _, b := range [][2]*int64{{oLo, oHi}, {iLo, iHi}} {
		if b[0] == nil {
			continue
		}
		if first || *b[0] < lo {
			lo = *b[0]
		}
		if first || *b[1]+1 > hi {
			hi = *b[1] + 1
		}
		first = false
	}
	return lo, hi, nil
}

// inboxWhere is the condition of the inbox rows in range: those of the
// outbox rows in range, and those created in it.
func (r *reader) inboxWhere() (string, []any) {
	if r.q.From.IsZero() && r.q.To.IsZero() {
		return "true", nil
	}
	return `outbox_id IN (SELECT id FROM ` + r.q.Names.from(r.q.Schema, "outbox") + ` WHERE ` + inRange("created_at") + `) OR ` + inRange("created_at"), bounds(r.q)
}

// readChunk reads the outbox rows in range with ids in [c.Lo, c.Hi) (the
// loose chunk has none), takes chunk i's inbox rows from where
// partitionInbox filed them, and reads their members' consent.
func (r *reader) readChunk(ctx context.Context, c chunk, inbox *spill[InboxRecord], i int) (Data, error) {
	d := Data{Now: r.now}
	var err error
	if !c.Loose {
		if d.Outbox, err = readOutbox(ctx, r.tx, r.q, c); err != nil {
			return d, notJudged(err)
		}
	}
	if d.Inbox, err = inbox.items(i); err != nil {
		return d, err
	}
	if r.members {
		if d.Consent, err = readConsent(ctx, r.tx, r.q, d.Outbox); err != nil {
			return d, notJudged(err)
		}
	}
	return d, nil
}

// checkTables fails when an audited table is missing (not judged) or the
// role may write one and q does not allow it (refused).
func checkTables(ctx context.Context, conn *pgx.Conn, q Query) error {
	var role string
	if err := conn.QueryRow(ctx, `SELECT current_user`).Scan(&role); err != nil {
		return notJudged(fmt.Errorf("read the current role: %w", err))
	}
	for _, t := range []string{"outbox", "inbox"} {
		var exists, writes bool
		name := q.Names.display(q.Schema, t)
		err := conn.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, q.Names.table(q.Schema, t)).Scan(&exists)
		if err != nil {
			return notJudged(fmt.Errorf("look up table %s: %w", name, err))
		}
		if !exists {
			return notJudged(fmt.Errorf("table %s does not exist: is --schema right (or --names, for tables named otherwise), and the role allowed to see it?", name))
		}
		err = conn.QueryRow(ctx, `SELECT has_table_privilege($1, 'INSERT, UPDATE, DELETE')`, q.Names.table(q.Schema, t)).Scan(&writes)
		if err != nil {
			return notJudged(fmt.Errorf("read the privileges of role %s on %s: %w", role, name, err))
		}
		if writes && !q.AllowWriteRole {
			return &RefusedError{Err: fmt.Errorf("role %s may INSERT, UPDATE or DELETE %s: run the audit as a role granted SELECT only, "+
				"or pass --allow-write-role (the audit's transaction is read-only either way)", role, name)}
		}
	}
	return nil
}

// inRange is the SQL condition that col lies in [$1, $2), either bound
// NULL meaning none.
func inRange(col string) string {
	return fmt.Sprintf("(($1::timestamptz IS NULL OR %[1]s >= $1) AND ($2::timestamptz IS NULL OR %[1]s < $2))", col)
}

// bounds are q's range as query arguments (nil: unbounded).
func bounds(q Query) []any {
	arg := func(t time.Time) any {
		if t.IsZero() {
			return nil
		}
		return t
	}
	return []any{arg(q.From), arg(q.To)}
}

func readOutbox(ctx context.Context, tx pgx.Tx, q Query, c chunk) ([]OutboxRecord, error) {
	rows, err := tx.Query(ctx, `SELECT id, dedup_key, kind, status, coalesce(status_reason, ''), attempts,
		coalesce(payload->>'member_id', ''), coalesce(payload->>'phone', ''), next_attempt_at, coalesce(claimed_by, ''),
		claimed_until, created_at, updated_at, published_at
		FROM `+q.Names.from(q.Schema, "outbox")+` WHERE `+inRange("created_at")+` AND id >= $3 AND id < $4 ORDER BY id`, append(bounds(q), c.Lo, c.Hi)...)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", OutboxTable, err)
	}
	out, err := pgx.AppendRows(make([]OutboxRecord, 0, min(c.Hi-c.Lo, 1<<20)), rows, func(row pgx.CollectableRow) (OutboxRecord, error) {
		var r OutboxRecord
		var member string
		var claimed, published *time.Time
		err := row.Scan(&r.ID, &r.DedupKey, &r.Kind, &r.Status, &r.Reason, &r.Attempts, &member, &r.Phone, &r.NextAttemptAt,
			&r.ClaimedBy, &claimed, &r.CreatedAt, &r.UpdatedAt, &published)
		r.MemberID, _ = strconv.ParseInt(member, 10, 64)
		r.ClaimedUntil, r.PublishedAt = deref(claimed), deref(published)
		return r, err
	})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", OutboxTable, err)
	}
	return out, nil
}

// partitionInbox reads the inbox rows in range in one pass, in id order,
// and files each under the chunk of the outbox row it names (the loose
// chunk's when it names none): the design indexes the inbox by
// message_id only, so one scan serves every chunk.
func (r *reader) partitionInbox(ctx context.Context, chunks []chunk) (*spill[InboxRecord], error) {
	sp, err := newSpill[InboxRecord](len(chunks))
	if err != nil {
		return nil, err
	}
	where, args := r.inboxWhere()
	rows, err := r.tx.Query(ctx, `SELECT id, coalesce(message_id, ''), coalesce(outbox_id, 0), coalesce(dedup_key, ''), coalesce(kind, ''),
		coalesce(phone, ''), status, coalesce(vendor_code, ''), coalesce(error, ''), created_at, updated_at, coalesce(settled, ''), resends
		FROM `+r.q.Names.from(r.q.Schema, "inbox")+` WHERE `+where+` ORDER BY id`, args...)
	if err != nil {
		sp.close()
		return nil, notJudged(fmt.Errorf("read %s: %w", InboxTable, err))
	}
	var ib InboxRecord
	_, err = pgx.ForEachRow(rows, []any{&ib.ID, &ib.MessageID, &ib.OutboxID, &ib.DedupKey, &ib.Kind, &ib.Phone, &ib.Status, &ib.VendorCode,
		&ib.Error, &ib.CreatedAt, &ib.UpdatedAt, &ib.Settled, &ib.Resends}, func() error { return sp.add(of(chunks, ib.OutboxID), ib) })
	if err != nil {
		sp.close()
		return nil, notJudged(fmt.Errorf("read %s: %w", InboxTable, err))
	}
	return sp, nil
}

// membersReadable reports whether the schema has a members table the
// role may read.
func membersReadable(ctx context.Context, tx pgx.Tx, q Query) (bool, error) {
	var exists, readable bool
	name := q.Names.display(q.Schema, "members")
	err := tx.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, q.Names.table(q.Schema, "members")).Scan(&exists)
	if err != nil {
		return false, fmt.Errorf("look up table %s: %w", name, err)
	}
	if !exists {
		return false, nil
	}
	err = tx.QueryRow(ctx, `SELECT has_table_privilege($1, 'SELECT')`, q.Names.table(q.Schema, "members")).Scan(&readable)
	if err != nil {
		return false, fmt.Errorf("read the privileges on %s: %w", name, err)
	}
	return readable, nil
}

// readConsent reads whether the members of rows may receive SMS.
func readConsent(ctx context.Context, tx pgx.Tx, q Query, rows []OutboxRecord) (map[int64]bool, error) {
	ids := make([]int64, 0, len(rows))
	for _, r := range rows {
		if r.MemberID != 0 {
			ids = append(ids, r.MemberID)
		}
	}
	res, err := tx.Query(ctx, `SELECT id, sms_consent AND active FROM `+q.Names.from(q.Schema, "members")+` WHERE id = ANY($1)`, ids)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", MembersTable, err)
	}
	out := map[int64]bool{}
	var id int64
	var ok bool
	_, err = pgx.ForEachRow(res, []any{&id, &ok}, func() error { out[id] = ok; return nil })
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", MembersTable, err)
	}
	return out, nil
}

// scope keeps the report lines of the audited rows (see Read) and counts
// the others.
func scope(ctx context.Context, tx pgx.Tx, q Query, d Data, report []ReportLine) ([]ReportLine, int, error) {
	if q.From.IsZero() && q.To.IsZero() {
		return report, 0, nil
	}
	known := map[string]bool{}
	for _, r := range d.Outbox {
		known[r.MessageID()] = true
	}
	for _, r := range d.Inbox {
		known[r.MessageID] = true
	}
	var unknown []string
	for _, l := range report {
		if !known[l.RefKey] {
			unknown = append(unknown, l.RefKey)
		}
	}
	elsewhere := map[string]bool{}
	if len(unknown) > 0 {
		var ids []int64
		for _, k := range unknown {
			if id, err := strconv.ParseInt(strings.TrimPrefix(k, "notification-outbox-"), 10, 64); err == nil && strings.HasPrefix(k, "notification-outbox-") {
				ids = append(ids, id)
			}
		}
		rows, err := tx.Query(ctx, `SELECT 'notification-outbox-' || id FROM `+q.Names.from(q.Schema, "outbox")+` WHERE id = ANY($1)
			UNION SELECT message_id FROM `+q.Names.from(q.Schema, "inbox")+` WHERE message_id = ANY($2)`, ids, unknown)
		if err != nil {
			return nil, 0, fmt.Errorf("look up report refkeys outside the range: %w", err)
		}
		var mid string
		if _, err := pgx.ForEachRow(rows, []any{&mid}, func() error { elsewhere[mid] = true; return nil }); err != nil {
			return nil, 0, fmt.Errorf("look up report refkeys outside the range: %w", err)
		}
	}
	var out []ReportLine
	skipped := 0
	for _, l := range report {
		dated := !l.At.IsZero() && ((!q.From.IsZero() && l.At.Before(q.From)) || (!q.To.IsZero() && !l.At.Before(q.To)))
		if !known[l.RefKey] && (elsewhere[l.RefKey] || dated) {
			skipped++
			continue
		}
		out = append(out, l)
	}
	return out, skipped, nil
}

func deref(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}

// Package audittest seeds a test's own schema with outbox and inbox rows,
// writes vendor reports and alert logs, and makes a read-only role: the
// fixtures the audit's tests and the audit command's tests share.
package audittest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/outboxchaos/outboxchaos/checker"
	"github.com/outboxchaos/outboxchaos/system/testenv"
)

// Outbox is an outbox row to seed; zero times default to an hour before
// Now.
type Outbox struct {
	ID           int64
	Kind         string // default GRADE_RENEWAL
	Status       string // default PUBLISHED
	ClaimedUntil time.Time
	Created      time.Time
	Published    time.Time
	Member       int64
}

// Key is the row's dedup key: its kind and id.
func (o Outbox) Key() string { return fmt.Sprintf("%s:%d", o.kind(), o.ID) }

func (o Outbox) kind() string {
	if o.Kind == "" {
		return "GRADE_RENEWAL"
	}
	return o.Kind
}

// MID is the row's message_id.
func (o Outbox) MID() string { return checker.MessageID(o.ID) }

// Inbox is an inbox row to seed, for outbox row OutboxID.
type Inbox struct {
	OutboxID int64
	Status   string // default SENT
	Settled  string
	Created  time.Time
	Updated  time.Time
}

// Now is the seeded data's reference time: the database's clock, rounded.
func Now() time.Time { return time.Now().UTC().Truncate(time.Second) }

// SeedOutbox inserts the rows into db's notification_outbox.
func SeedOutbox(t testing.TB, db *testenv.DB, rows ...Outbox) {
	t.Helper()
	ctx := context.Background()
	hourAgo := Now().Add(-time.Hour)
	for _, o := range rows {
		status := o.Status
		if status == "" {
			status = "PUBLISHED"
		}
		created := or(o.Created, hourAgo)
		published := o.Published
		if published.IsZero() && status == "PUBLISHED" {
			published = created
		}
		var claimedBy, claimedUntil any
		if status == "PUBLISHING" {
			claimedBy, claimedUntil = "relay-1", o.ClaimedUntil
		}
		var pub any
		if !published.IsZero() {
			pub = published
		}
		member := o.Member
		if member == 0 {
			member = o.ID
		}
		payload, _ := json.Marshal(map[string]any{"kind": o.kind(), "member_id": member, "phone": fmt.Sprintf("010-0000-%04d", member)})
		_, err := db.Pool.Exec(ctx, `INSERT INTO notification_outbox (id, dedup_key, kind, payload, scheduled_date, status, next_attempt_at,
			claimed_by, claimed_until, created_at, updated_at, published_at) VALUES ($1, $2, $3, $4, $5::timestamptz::date, $6, $5, $7, $8, $5, $9, $10)`,
			o.ID, o.Key(), o.kind(), payload, created, status, claimedBy, claimedUntil, latest(created, published), pub)
		if err != nil {
			t.Fatalf("seed outbox row %d: %v", o.ID, err)
		}
	}
}

// SeedInbox inserts the rows into db's notification_histories.
func SeedInbox(t testing.TB, db *testenv.DB, rows ...Inbox) {
	t.Helper()
	ctx := context.Background()
	for _, r := range rows {
		status := r.Status
		if status == "" {
			status = "SENT"
		}
		created := or(r.Created, Now().Add(-time.Hour))
		var settled any
		if r.Settled != "" {
			settled = r.Settled
		}
		_, err := db.Pool.Exec(ctx, `INSERT INTO notification_histories (message_id, outbox_id, dedup_key, kind, phone, status, created_at, updated_at, settled)
			SELECT $1, id, dedup_key, kind, payload->>'phone', $2, $3, $4, $5 FROM notification_outbox WHERE id = $6`,
			checker.MessageID(r.OutboxID), status, created, or(r.Updated, created), settled, r.OutboxID)
		if err != nil {
			t.Fatalf("seed inbox row of %d: %v", r.OutboxID, err)
		}
	}
}

// Line is a report line: refkey, status, time, dedup key.
type Line struct {
	RefKey   string
	Status   string
	At       time.Time
	DedupKey string
}

// WriteCSV writes lines as a CSV report in dir and returns its path.
func WriteCSV(t testing.TB, dir string, lines ...Line) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("refkey,status,phone,at,dedup_key\n")
	for _, l := range lines {
		status := l.Status
		if status == "" {
			status = "SENT"
		}
		at := ""
		if !l.At.IsZero() {
			at = l.At.Format(time.RFC3339)
		}
		fmt.Fprintf(&b, "%s,%s,010-0000-0000,%s,%s\n", l.RefKey, status, at, l.DedupKey)
	}
	return WriteFile(t, dir, "report.csv", b.String())
}

// WriteAlerts writes alerts as an alert log (one JSON alert a line) in
// dir and returns its path.
func WriteAlerts(t testing.TB, dir string, alerts ...checker.AlertRecord) string {
	t.Helper()
	var b strings.Builder
	for _, a := range alerts {
		j, err := json.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(j)
		b.WriteByte('\n')
	}
	return WriteFile(t, dir, "alerts.jsonl", b.String())
}

// WriteFile writes text to dir/name and returns its path.
func WriteFile(t testing.TB, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// ReadOnlyRole creates a login role that may only SELECT db's tables,
// dropped in t.Cleanup, and returns db's URL logged in as it.
func ReadOnlyRole(t testing.TB, db *testenv.DB) string {
	t.Helper()
	ctx := context.Background()
	role := "oc_audit_ro_" + strings.TrimPrefix(testenv.Name(t), "oc_")
	role = role[:min(len(role), 60)]
	id := pgx.Identifier{role}.Sanitize()
	schema := pgx.Identifier{db.Schema}.Sanitize()
	for _, q := range []string{"CREATE ROLE " + id + " LOGIN", "GRANT USAGE ON SCHEMA " + schema + " TO " + id,
		"GRANT SELECT ON ALL TABLES IN SCHEMA " + schema + " TO " + id} {
		if _, err := db.Pool.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	t.Cleanup(func() {
		for _, q := range []string{"DROP OWNED BY " + id, "DROP ROLE " + id} {
			if _, err := db.Pool.Exec(context.Background(), q); err != nil {
				t.Logf("cleanup: %s: %v", q, err)
			}
		}
	})
	u, err := url.Parse(db.URL)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.User(role)
	return u.String()
}

func or(t, def time.Time) time.Time {
	if t.IsZero() {
		return def
	}
	return t
}

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

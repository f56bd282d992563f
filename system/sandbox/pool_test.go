package sandbox_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/outboxchaos/outboxchaos/system/sandbox"
	"github.com/outboxchaos/outboxchaos/system/testenv"
)

func newPool(t *testing.T) *sandbox.Pool {
	t.Helper()
	testenv.Require(t)
	p := sandbox.NewPool(testenv.PGURL(), testenv.AMQPURL(), 4)
	p.ReleaseWait = 300 * time.Millisecond
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("close pool: %v", err)
		}
	})
	return p
}

func get(t *testing.T, p *sandbox.Pool) *sandbox.Sandbox {
	t.Helper()
	sb, err := p.Get(context.Background(), "oc_pooltest")
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	if !sb.Migrated() {
		t.Fatalf("a pooled sandbox says it is not migrated")
	}
	return sb
}

func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	c, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

func exec1(t *testing.T, c *pgx.Conn, sql string) {
	t.Helper()
	if _, err := c.Exec(context.Background(), sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func schemaExists(t *testing.T, name string) bool {
	t.Helper()
	var ok bool
	c := connect(t, testenv.PGURL())
	if err := c.QueryRow(context.Background(), `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)`, name).Scan(&ok); err != nil {
		t.Fatal(err)
	}
	return ok
}

const outboxRow = `INSERT INTO notification_outbox (dedup_key, kind, payload, scheduled_date, next_attempt_at, created_at, updated_at)
	VALUES ('k', 'GRADE_RENEWAL', '{}', '2026-12-04', now(), now(), now())`

// A run's rows and sequences are gone when its schema comes back: the next
// run gets the same schema, a new prefix, no row and ids from 1.
func TestPoolReusesAnEmptiedSchema(t *testing.T) {
	p := newPool(t)
	sb := get(t, p)
	c := connect(t, sb.PGURL)
	exec1(t, c, outboxRow)
	exec1(t, c, `INSERT INTO members (id, name, phone) VALUES (1, 'a', '010')`)
	exec1(t, c, `INSERT INTO notification_histories (message_id, status, created_at, updated_at) VALUES ('m', 'SENT', now(), now())`)
	_ = c.Close(context.Background())
	first, prefix := sb.Schema, sb.Prefix
	if err := sb.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	again := get(t, p)
	if again.Schema != first {
		t.Fatalf("second run got schema %s, want the kept %s (stats %+v)", again.Schema, first, p.Stats())
	}
	if again.Prefix == prefix {
		t.Errorf("second run got the first run's queue prefix %s", prefix)
	}
	c = connect(t, again.PGURL)
	for _, table := range []string{"notification_outbox", "members", "notification_histories"} {
		var n int
		if err := c.QueryRow(context.Background(), "SELECT count(*) FROM "+table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Errorf("%s has %d rows after the reset, want 0", table, n)
		}
	}
	exec1(t, c, outboxRow)
	var id int64
	if err := c.QueryRow(context.Background(), `SELECT id FROM notification_outbox`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	if id != 1 {
		t.Errorf("first outbox id after the reset is %d, want 1", id)
	}
	_ = c.Close(context.Background())
	if err := again.Close(); err != nil {
		t.Fatal(err)
	}
	if st := p.Stats(); st.Created != 1 || st.Reused != 1 || st.Kept != 2 || st.Dropped != 0 {
		t.Errorf("stats %+v, want 1 created, 1 reused, 2 kept, 0 dropped", st)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if schemaExists(t, first) {
		t.Errorf("schema %s still there after the pool closed", first)
	}
}

// A schema whose layout changed during its run is dropped, not kept: the
// next run would not start from the migration.
func TestPoolDropsAChangedSchema(t *testing.T) {
	for name, ddl := range map[string]string{
		"index dropped":  `DROP INDEX notification_histories_message_id_uq`,
		"column added":   `ALTER TABLE notification_outbox ADD COLUMN extra INT`,
		"check dropped":  `ALTER TABLE notification_outbox DROP CONSTRAINT notification_outbox_status_ck`,
		"table added":    `CREATE TABLE stray (id INT)`,
		"default change": `ALTER TABLE notification_outbox ALTER COLUMN attempts SET DEFAULT 1`,
	} {
		t.Run(strings.ReplaceAll(name, " ", "-"), func(t *testing.T) {
			p := newPool(t)
			sb := get(t, p)
			c := connect(t, sb.PGURL)
			exec1(t, c, ddl)
			_ = c.Close(context.Background())
			if err := sb.Close(); err != nil {
				t.Fatal(err)
			}
			st := p.Stats()
			if st.Dropped != 1 || st.Kept != 0 || !strings.Contains(st.WhyDropped, "changed") {
				t.Fatalf("stats %+v, want the changed schema dropped", st)
			}
			if schemaExists(t, sb.Schema) {
				t.Errorf("changed schema %s still there", sb.Schema)
			}
		})
	}
}

// A session of the run still on the server (a killed pod's backend
// finishing a statement, found by its application name, or any session
// holding a lock in the schema) has the schema dropped, not reset under
// it; once the run's sessions are gone, it is kept.
func TestPoolWaitsForTheRunsSessions(t *testing.T) {
	p := newPool(t)
	ctx := context.Background()

	sb := get(t, p)
	pod := connect(t, sb.PGURL+"&application_name="+sb.Prefix+"/worker-1")
	exec1(t, pod, `SELECT 1`)
	if err := sb.Close(); err != nil {
		t.Fatal(err)
	}
	if st := p.Stats(); st.Dropped != 1 || !strings.Contains(st.WhyDropped, "still on schema") {
		t.Fatalf("stats %+v: a pod's session still open should have the schema dropped", st)
	}
	_ = pod.Close(ctx)

	sb = get(t, p)
	holder := connect(t, sb.PGURL) // no application name: found by its lock
	tx, err := holder.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `LOCK TABLE notification_outbox IN ACCESS SHARE MODE`); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- sb.Close() }()
	// The drop waits for the holder's lock: end the holder's transaction
	// once the DROP is seen waiting.
	admin := connect(t, testenv.PGURL())
	for deadline := time.Now().Add(20 * time.Second); ; {
		var n int
		if err := admin.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'DROP SCHEMA%'||$1||'%'`,
			sb.Schema).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the drop of %s never waited for the holder's lock (stats %+v)", sb.Schema, p.Stats())
		}
		time.Sleep(10 * time.Millisecond)
	}
	_ = tx.Rollback(ctx)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if st := p.Stats(); st.Dropped != 2 {
		t.Fatalf("stats %+v: a session holding a lock in the schema should have it dropped", st)
	}
	_ = holder.Close(ctx)

	sb = get(t, p)
	pod = connect(t, sb.PGURL+"&application_name="+sb.Prefix+"/relay-1")
	exec1(t, pod, `SELECT count(*) FROM notification_outbox`)
	_ = pod.Close(ctx)
	// A closed connection's backend ends a moment later, which on a loaded
	// machine can be longer than this pool's short ReleaseWait: the run's
	// sessions are gone once the server no longer lists it.
	testenv.Eventually(t, 30*time.Second, "the pod's backend to end", func() bool {
		var n int
		if err := admin.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, sb.Prefix+"/relay-1").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 0
	})
	if err := sb.Close(); err != nil {
		t.Fatal(err)
	}
	if st := p.Stats(); st.Kept != 1 || st.Dropped != 2 {
		t.Fatalf("stats %+v: with the run's sessions gone the schema should be kept", st)
	}
}

// Sweep drops the pool schemas of a process of this host that is gone,
// and leaves a live process's and another host's.
func TestSweepDropsOrphans(t *testing.T) {
	testenv.Require(t)
	ctx := context.Background()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	admin := connect(t, testenv.PGURL())
	self := liveOwner(t, admin)
	schemas := map[string]string{
		"dead":  fmt.Sprintf("outboxchaos pool host=%s pid=%d start=1", host, dead.Process.Pid),
		"live":  self,
		"other": fmt.Sprintf("outboxchaos pool host=%s-elsewhere pid=%d start=1", host, dead.Process.Pid),
	}
	names := map[string]string{}
	for k, comment := range schemas {
		name := fmt.Sprintf("%stest_%s_%d", sandbox.PoolSchemaPrefix, k, time.Now().UnixNano()%1e9)
		names[k] = name
		id := pgx.Identifier{name}.Sanitize()
		exec1(t, admin, "CREATE SCHEMA "+id+"; COMMENT ON SCHEMA "+id+" IS '"+comment+"'")
		t.Cleanup(func() { _, _ = admin.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+id+" CASCADE") })
	}
	if _, err := sandbox.Sweep(ctx, testenv.PGURL()); err != nil {
		t.Fatal(err)
	}
	if schemaExists(t, names["dead"]) {
		t.Errorf("the dead process's schema was not swept")
	}
	if !schemaExists(t, names["live"]) || !schemaExists(t, names["other"]) {
		t.Errorf("a live process's or another host's schema was swept")
	}
}

// liveOwner is the owner comment a pool of this test process writes,
// read back from a schema it created.
func liveOwner(t *testing.T, admin *pgx.Conn) string {
	t.Helper()
	p := newPool(t)
	sb := get(t, p)
	var comment string
	if err := admin.QueryRow(context.Background(), `SELECT obj_description($1::regnamespace, 'pg_namespace')`, sb.Schema).Scan(&comment); err != nil {
		t.Fatal(err)
	}
	if err := sb.Close(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(comment, fmt.Sprintf("pid=%d ", os.Getpid())) {
		t.Fatalf("owner comment %q does not name this process", comment)
	}
	return comment
}

// A kept schema's tables are vacuumed every few resets (with autovacuum
// off, the dead rows of every earlier run would stay): VACUUM records the
// table's size in pg_class, which nothing else in a run does.
func TestPoolVacuumsKeptTables(t *testing.T) {
	p := newPool(t)
	ctx := context.Background()
	admin := connect(t, testenv.PGURL())
	vacuumed := func(schema string) bool {
		t.Helper()
		var at *time.Time
		if err := admin.QueryRow(ctx, `SELECT greatest(last_vacuum, last_autovacuum) FROM pg_stat_all_tables WHERE schemaname = $1 AND relname = 'notification_outbox'`, schema).Scan(&at); err != nil {
			t.Fatal(err)
		}
		return at != nil
	}
	var schema string
	for i := 1; i <= 16; i++ {
		sb := get(t, p)
		schema = sb.Schema
		c := connect(t, sb.PGURL)
		exec1(t, c, outboxRow)
		_ = c.Close(ctx)
		if err := sb.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if st := p.Stats(); st.Created != 1 || st.Kept != 16 {
		t.Fatalf("stats %+v, want one schema kept 16 times", st)
	}
	// The vacuuming session's statistics reach the server when it ends.
	for deadline := time.Now().Add(10 * time.Second); !vacuumed(schema); {
		if time.Now().After(deadline) {
			t.Fatalf("notification_outbox of %s not vacuumed after 16 resets", schema)
		}
		time.Sleep(20 * time.Millisecond) // polling a condition, no verdict rides on it
	}
}

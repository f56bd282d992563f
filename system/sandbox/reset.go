package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/procfs"
)

// A kept schema is handed to the next run only if it is as new: no session
// of the run left (a backend of a killed pod still finishing a statement
// could write into the next run), no row, every sequence restarting at 1,
// and the same tables, columns, indexes (valid), constraints, triggers and
// functions as just after its migration. Anything else drops it.

// layoutQuery is a schema's catalog fingerprint ($1: its name).
const layoutQuery = `SELECT md5(coalesce(string_agg(x, E'\n' ORDER BY x), '')) FROM (
	SELECT 'rel ' || c.relname || ' ' || c.relkind::text FROM pg_class c WHERE c.relnamespace = $1::regnamespace
	UNION ALL
	SELECT 'col ' || c.relname || '.' || a.attname || ' ' || format_type(a.atttypid, a.atttypmod) || ' ' || a.attnotnull
	       || ' ' || coalesce(pg_get_expr(d.adbin, d.adrelid), '')
	  FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
	  LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
	 WHERE c.relnamespace = $1::regnamespace AND a.attnum > 0 AND NOT a.attisdropped
	UNION ALL
	SELECT 'idx ' || pg_get_indexdef(i.indexrelid) || ' ' || i.indisvalid || i.indisready
	  FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relnamespace = $1::regnamespace
	UNION ALL
	SELECT 'con ' || conname || ' ' || pg_get_constraintdef(oid) FROM pg_constraint WHERE connamespace = $1::regnamespace
	UNION ALL
	SELECT 'trg ' || t.tgname || ' ' || t.tgenabled::text FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
	 WHERE c.relnamespace = $1::regnamespace AND NOT t.tgisinternal
	UNION ALL
	SELECT 'fn ' || p.oid::regprocedure::text FROM pg_proc p WHERE p.pronamespace = $1::regnamespace
) AS layout(x)`

// fingerprint is the schema's layout as layoutQuery sums it up.
func fingerprint(ctx context.Context, conn *pgx.Conn, name string) (string, error) {
	var sum string
	if err := conn.QueryRow(ctx, layoutQuery, name).Scan(&sum); err != nil {
		return "", fmt.Errorf("read the layout of schema %s: %w", name, err)
	}
	return sum, nil
}

// resetStatement empties every table of the schema and restarts its
// sequences: DELETE, not TRUNCATE, so no relation gets a new file and the
// catalog does not change (TRUNCATE costs about four times as much). It
// also returns the tables, quoted, for the VACUUM every vacuumEvery
// resets.
func resetStatement(ctx context.Context, conn *pgx.Conn, name string) (string, []string, error) {
	rows, err := conn.Query(ctx, `SELECT 't', tablename FROM pg_tables WHERE schemaname = $1
		UNION ALL SELECT 's', sequencename FROM pg_sequences WHERE schemaname = $1 ORDER BY 1, 2`, name)
	if err != nil {
		return "", nil, fmt.Errorf("list the tables of schema %s: %w", name, err)
	}
	rels, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (r [2]string, err error) {
		err = row.Scan(&r[0], &r[1])
		return r, err
	})
	if err != nil {
		return "", nil, fmt.Errorf("list the tables of schema %s: %w", name, err)
	}
	var tables, stmts, seqs []string
	for _, r := range rels {
		id := pgx.Identifier{name, r[1]}.Sanitize()
		if r[0] == "t" {
			tables = append(tables, id)
			stmts = append(stmts, "DELETE FROM "+id)
		} else {
			seqs = append(seqs, "setval("+quote(id)+", 1, false)")
		}
	}
	if len(tables) == 0 {
		return "", nil, fmt.Errorf("schema %s has no table", name)
	}
	if len(seqs) > 0 {
		stmts = append(stmts, "SELECT "+strings.Join(seqs, ", "))
	}
	return strings.Join(stmts, "; "), tables, nil
}

// vacuumEvery: a kept schema's tables are vacuumed after every this many
// resets. The rows a DELETE removes stay as dead tuples until a VACUUM,
// and PostgreSQL may run with autovacuum off (as on this project's
// machines): a schema kept for a long budget would otherwise make every
// later run scan its predecessors' rows.
const vacuumEvery = 16

// leftQuery counts the sessions of a run still on the server ($1: the
// run's application_name prefix; $2: the schema): a pod's backend, or any
// session holding a lock on one of the schema's relations or the schema's
// migration lock.
const leftQuery = `SELECT count(*) FROM pg_stat_activity a WHERE a.pid <> pg_backend_pid() AND (
	a.application_name LIKE $1 || '/%'
	OR EXISTS (SELECT 1 FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
	            WHERE l.pid = a.pid AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
	              AND c.relnamespace = $2::regnamespace)
	OR EXISTS (SELECT 1 FROM pg_locks l WHERE l.pid = a.pid AND l.locktype = 'advisory'
	              AND ((l.classid::bigint << 32) | l.objid::bigint) = hashtextextended('outboxchaos.migrate:' || $2, 0)))`

// renew makes a returned sandbox's schema new again, or says why it cannot.
func renew(ctx context.Context, s *Sandbox, wait time.Duration) error {
	conn, done, err := resetConn(ctx, s)
	if err != nil {
		return fmt.Errorf("connect to reset schema %s: %w", s.Schema, err)
	}
	defer done()
	if err := awaitLeft(ctx, conn, s.Prefix, s.Schema, wait); err != nil {
		return err
	}
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := conn.Exec(rctx, s.kept.reset); err != nil {
		return fmt.Errorf("empty schema %s: %w", s.Schema, err)
	}
	if s.kept.resets++; s.kept.resets%vacuumEvery == 0 {
		// VACUUM runs outside a transaction: one statement per table.
		for _, t := range s.kept.tables {
			if _, err := conn.Exec(rctx, "VACUUM "+t); err != nil {
				return fmt.Errorf("vacuum schema %s: %w", s.Schema, err)
			}
		}
	}
	layout, err := fingerprint(rctx, conn, s.Schema)
	if err != nil {
		return err
	}
	if layout != s.kept.layout {
		return fmt.Errorf("schema %s changed during its run (tables, columns, indexes or constraints)", s.Schema)
	}
	return nil
}

// awaitLeft waits until no session of the run is left (leftQuery).
func awaitLeft(ctx context.Context, conn *pgx.Conn, prefix, name string, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		var n int
		if err := conn.QueryRow(ctx, leftQuery, prefix, name).Scan(&n); err != nil {
			return fmt.Errorf("look for the run's sessions on schema %s: %w", name, err)
		}
		if n == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d sessions of the run still on schema %s after %s", n, name, wait)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// owner names this process as the owner of the schemas its pools create:
// host, pid and the process's start time (so a reused pid is not taken
// for it).
func owner() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("outboxchaos pool host=%s pid=%d start=%d", host, os.Getpid(), startTime(os.Getpid()))
}

// startTime is a process's start time in clock ticks since boot, or -1.
func startTime(pid int) int64 {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return -1
	}
	st, err := p.Stat()
	if err != nil {
		return -1
	}
	return int64(st.Starttime)
}

// Sweep drops the pool schemas (PoolSchemaPrefix) that a process on this
// host created and that outlived it: a harness killed before it could
// close its pool. Schemas of live processes, and of other hosts, stay. It
// returns how many it dropped.
func Sweep(ctx context.Context, base string) (int, error) {
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		return 0, fmt.Errorf("connect to Postgres to sweep old pool schemas: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	rows, err := conn.Query(ctx, `SELECT nspname, coalesce(obj_description(oid, 'pg_namespace'), '')
		FROM pg_namespace WHERE starts_with(nspname, $1)`, PoolSchemaPrefix)
	if err != nil {
		return 0, fmt.Errorf("list pool schemas: %w", err)
	}
	var gone []string
	for rows.Next() {
		var name, comment string
		if err := rows.Scan(&name, &comment); err != nil {
			return 0, fmt.Errorf("list pool schemas: %w", err)
		}
		if orphan(comment) {
			gone = append(gone, name)
		}
	}
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("list pool schemas: %w", err)
	}
	var errs []error
	n := 0
	for _, name := range gone {
		if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{name}.Sanitize()+" CASCADE"); err != nil {
			errs = append(errs, fmt.Errorf("drop old pool schema %s: %w", name, err))
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}

// orphan reports whether a pool schema's owner comment names a process of
// this host that is no longer running.
func orphan(comment string) bool {
	f := map[string]string{}
	for _, kv := range strings.Fields(comment) {
		if k, v, ok := strings.Cut(kv, "="); ok {
			f[k] = v
		}
	}
	host, _ := os.Hostname()
	pid, perr := strconv.Atoi(f["pid"])
	start, serr := strconv.ParseInt(f["start"], 10, 64)
	if f["host"] != host || perr != nil || serr != nil {
		return false
	}
	return startTime(pid) != start
}

// resetConn is a connection to s's schema for its reset: one of its kept
// Observer pool's when it has one (no new backend), else a new one. done
// hands it back.
func resetConn(ctx context.Context, s *Sandbox) (*pgx.Conn, func(), error) {
	if s.kept != nil && s.kept.conns != nil {
		c, err := s.kept.conns.Acquire(ctx)
		if err != nil {
			return nil, nil, err
		}
		return c.Conn(), c.Release, nil
	}
	conn, err := pgx.Connect(ctx, s.PGURL)
	if err != nil {
		return nil, nil, err
	}
	return conn, func() { _ = conn.Close(context.WithoutCancel(ctx)) }, nil
}

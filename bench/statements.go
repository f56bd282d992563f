package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// StmtCost is what one kind of statement cost the database during a timed
// part, read from pg_stat_statements: the statements of one phase (named
// as phaseOf names them) summed.
type StmtCost struct {
	Phase string
	Calls int64
	Rows  int64
	// Exec is the time the server spent executing them (wall time inside
	// the executor: it includes waits for locks and for a CPU).
	Exec time.Duration
	// Blocks are the shared buffers they touched (hit or read), Dirtied
	// those they dirtied; WALBytes is the write-ahead log they wrote.
	Blocks, Dirtied, WALBytes int64
}

// stmtRow is one pg_stat_statements entry at one instant.
type stmtRow struct {
	calls, rows, blocks, dirtied, wal int64
	exec                              float64 // ms
	query                             string
}

// stmtStats reads pg_stat_statements, when PostgreSQL loads it
// (shared_preload_libraries): the statements of the measurements, by
// statement, before and after each timed part.
type stmtStats struct {
	pool *pgxpool.Pool
	view string // schema-qualified pg_stat_statements view
	// why is the reason there is no view ("" when there is one).
	why string
}

// openStmtStats finds the pg_stat_statements view, creating the extension
// in the run's schema when the database has not got it (it goes with the
// schema). Without the library loaded, the split is not measured and why
// says so.
func openStmtStats(ctx context.Context, pool *pgxpool.Pool) *stmtStats {
	s := &stmtStats{pool: pool}
	var loaded string
	if err := pool.QueryRow(ctx, `SELECT current_setting('shared_preload_libraries')`).Scan(&loaded); err != nil {
		s.why = fmt.Sprintf("shared_preload_libraries could not be read: %v", err)
		return s
	}
	if !slices.Contains(strings.Split(strings.ReplaceAll(loaded, " ", ""), ","), "pg_stat_statements") {
		s.why = "PostgreSQL does not load pg_stat_statements (add it to shared_preload_libraries and restart PostgreSQL to see this split)"
		return s
	}
	if _, err := pool.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS pg_stat_statements`); err != nil {
		s.why = fmt.Sprintf("CREATE EXTENSION pg_stat_statements: %v", err)
		return s
	}
	var schema string
	err := pool.QueryRow(ctx, `SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
		WHERE e.extname = 'pg_stat_statements'`).Scan(&schema)
	if err != nil {
		s.why = fmt.Sprintf("find pg_stat_statements: %v", err)
		return s
	}
	s.view = pgx.Identifier{schema, "pg_stat_statements"}.Sanitize()
	if _, err := s.sample(ctx); err != nil {
		s.view, s.why = "", err.Error()
	}
	return s
}

// sample reads every top-level statement of this database, by query id.
func (s *stmtStats) sample(ctx context.Context) (map[int64]stmtRow, error) {
	if s == nil || s.view == "" {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT queryid, query, calls, rows, total_exec_time,
		shared_blks_hit + shared_blks_read, shared_blks_dirtied, wal_bytes::bigint
		FROM `+s.view+` WHERE toplevel AND dbid = (SELECT oid FROM pg_database WHERE datname = current_database())`)
	if err != nil {
		return nil, fmt.Errorf("read pg_stat_statements: %w", err)
	}
	defer rows.Close()
	out := map[int64]stmtRow{}
	for rows.Next() {
		var id int64
		var r stmtRow
		if err := rows.Scan(&id, &r.query, &r.calls, &r.rows, &r.exec, &r.blocks, &r.dirtied, &r.wal); err != nil {
			return nil, fmt.Errorf("scan pg_stat_statements: %w", err)
		}
		out[id] = r
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read pg_stat_statements: %w", err)
	}
	return out, nil
}

// since is what the pipeline's statements cost between the sample before
// and now, by phase, largest execution time first. Statements phaseOf does
// not name (the measurement's own set-up and checks) are left out.
func (s *stmtStats) since(ctx context.Context, before map[int64]stmtRow) []StmtCost {
	if s == nil || s.view == "" || before == nil {
		return nil
	}
	after, err := s.sample(ctx)
	if err != nil {
		// The view went away (another run's schema held the extension
		// and was dropped): the split stops here, and says why.
		s.view, s.why = "", err.Error()
		return nil
	}
	var deltas []StmtCost
	for id, a := range after {
		b := before[id]
		if a.calls == b.calls {
			continue
		}
		phase := phaseOf(a.query)
		if phase == phaseOther {
			continue
		}
		deltas = append(deltas, StmtCost{Phase: phase, Calls: a.calls - b.calls, Rows: a.rows - b.rows,
			Exec:   time.Duration((a.exec - b.exec) * float64(time.Millisecond)),
			Blocks: a.blocks - b.blocks, Dirtied: a.dirtied - b.dirtied, WALBytes: a.wal - b.wal})
	}
	return mergeStmts([][]StmtCost{deltas})
}

// mergeStmts sums the statements of several rounds of one measurement by
// phase, largest execution time first (then by phase, so that the order
// does not depend on the order of the rounds' entries).
func mergeStmts(rounds [][]StmtCost) []StmtCost {
	by := map[string]*StmtCost{}
	var order []string
	for _, r := range rounds {
		for _, c := range r {
			m := by[c.Phase]
			if m == nil {
				m = &StmtCost{Phase: c.Phase}
				by[c.Phase] = m
				order = append(order, c.Phase)
			}
			m.Calls += c.Calls
			m.Rows += c.Rows
			m.Exec += c.Exec
			m.Blocks += c.Blocks
			m.Dirtied += c.Dirtied
			m.WALBytes += c.WALBytes
		}
	}
	out := make([]StmtCost, 0, len(order))
	for _, p := range order {
		out = append(out, *by[p])
	}
	slices.SortFunc(out, func(x, y StmtCost) int {
		if x.Exec != y.Exec {
			return int(y.Exec - x.Exec)
		}
		return strings.Compare(x.Phase, y.Phase)
	})
	return out
}

// stmtSplitIDs are the measurements whose statements the page splits,
// beside one another: the relay's two raw statements alone, the relay
// draining and one batch at a time, and the worker beside its raw inbox
// statements.
var stmtSplitIDs = []string{IDRawRelaySQL, IDRelay, IDRelayRunOnce, IDRawInboxSQL, IDWorker0}

// stmtLines renders the statement split, one line per measurement and
// statement, per message: calls, rows per call, execution time, buffers
// and WAL.
func (r *Report) stmtLines() []string {
	if r.StmtsWhy != "" {
		return []string{"Not measured: " + r.StmtsWhy + "."}
	}
	var out []string
	for _, id := range stmtSplitIDs {
		x, ok := r.Result(id)
		if !ok || x.Err != "" || x.Msgs <= 0 || len(x.Statements) == 0 {
			continue
		}
		n := float64(x.Msgs)
		var exec time.Duration
		var parts []string
		for _, c := range x.Statements {
			exec += c.Exec
			rowsPer := 0.0
			if c.Calls > 0 {
				rowsPer = float64(c.Rows) / float64(c.Calls)
			}
			parts = append(parts, fmt.Sprintf("%s: %s, %.0f rows each, %.1f µs, %.1f buffers (%.2f dirtied), %.0f B WAL",
				strings.TrimPrefix(c.Phase, "sql "), callsPer(c.Calls, x.Msgs), rowsPer, usPer(c.Exec, x.Msgs), float64(c.Blocks)/n, float64(c.Dirtied)/n, float64(c.WALBytes)/n))
		}
		line := fmt.Sprintf("`%s`, per message: executing %.1f µs", id, usPer(exec, x.Msgs))
		if x.CPUOK {
			line += fmt.Sprintf(" (the database's CPU: %.0f µs)", usPer(x.CPU.Database, x.Msgs))
		}
		out = append(out, line+" — "+strings.Join(parts, "; "))
	}
	return out
}

// callsPer says how often a statement ran for msgs messages: "1.00 call"
// (a message) or "1 call per 50 messages".
func callsPer(calls int64, msgs int) string {
	per := float64(calls) / float64(msgs)
	switch {
	case calls == 0:
		return "no call"
	case per >= 0.5:
		return fmt.Sprintf("%.2f calls", per)
	default:
		return fmt.Sprintf("1 call per %.1f messages", 1/per)
	}
}

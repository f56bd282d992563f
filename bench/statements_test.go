package bench

import (
	"strings"
	"testing"
	"time"
)

// The rounds of one measurement add up by phase, and the page shows each
// phase per message: calls, rows per call, execution time, buffers, WAL.
func TestStmtLines_PerMessage(t *testing.T) {
	t.Parallel()
	round := []StmtCost{
		{Phase: "sql mark PUBLISHED", Calls: 10, Rows: 500, Exec: 5 * time.Millisecond, Blocks: 5000, WALBytes: 300_000},
		{Phase: "sql claim + consent lookup (one statement)", Calls: 10, Rows: 500, Exec: 10 * time.Millisecond, Blocks: 9000, WALBytes: 350_000},
	}
	merged := mergeStmts([][]StmtCost{round, round})
	if len(merged) != 2 || merged[0].Phase != round[1].Phase || merged[0].Calls != 20 || merged[1].WALBytes != 600_000 {
		t.Fatalf("merged %+v", merged)
	}
	rep := &Report{Results: []Result{{ID: IDRelay, Msgs: 1000, Statements: merged, CPUOK: true, CPU: CPU{Database: 60 * time.Millisecond}}}}
	lines := rep.stmtLines()
	if len(lines) != 1 {
		t.Fatalf("lines %q", lines)
	}
	for _, want := range []string{"`relay.r1.b50`, per message: executing 30.0 µs (the database's CPU: 60 µs)",
		"claim + consent lookup (one statement): 1 call per 50.0 messages, 50 rows each, 20.0 µs, 18.0 buffers", "mark PUBLISHED:", "600 B WAL"} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("line lacks %q:\n%s", want, lines[0])
		}
	}
	rep.StmtsWhy = "PostgreSQL does not load pg_stat_statements"
	if l := rep.stmtLines(); len(l) != 1 || !strings.HasPrefix(l[0], "Not measured: PostgreSQL does not load") {
		t.Errorf("without the view: %q", l)
	}
}

// pg_stat_statements shows a statement with its constants as $n: the
// phases are still named.
func TestPhaseOf_NormalizedStatements(t *testing.T) {
	t.Parallel()
	for sql, want := range map[string]string{
		`UPDATE notification_outbox SET status = $4, published_at = $3, status_reason = $5, updated_at = $3 WHERE id = ANY($1) AND status = $6 AND claimed_by = $2 RETURNING id`: "sql mark PUBLISHED",
		`SELECT coalesce((SELECT status FROM notification_histories WHERE message_id = $1), $3), coalesce((SELECT sms_consent AND active FROM members WHERE id = $2), $4)`:       "sql inbox peek + consent lookup (one statement)",
		`SELECT status FROM notification_histories WHERE message_id = $1`: "sql inbox peek",
		`SELECT count(*) FROM notification_outbox WHERE status = $1`:      phaseOther,
	} {
		if got := phaseOf(sql); got != want {
			t.Errorf("phaseOf(%.60q) = %q, want %q", sql, got, want)
		}
	}
}

package outbox

import (
	"strings"
	"testing"

	"github.com/outboxchaos/outboxchaos/system/canary"
)

// TestCanaryInsertDiffersOnlyInOnConflict: the PlainInsert statement is the
// insert-ignore without its ON CONFLICT clause, nothing else.
func TestCanaryInsertDiffersOnlyInOnConflict(t *testing.T) {
	const clause = "\n\t\tON CONFLICT (dedup_key) DO NOTHING"
	if !strings.HasSuffix(insertSQL, clause) || strings.TrimSuffix(insertSQL, clause) != insertSQLPlain {
		t.Errorf("insertSQLPlain is not insertSQL without %q:\n%s\n---\n%s", clause, insertSQL, insertSQLPlain)
	}
}

// TestNewInserterChoosesOnce: the statement is chosen when the inserter is
// built; the zero Inserter is the insert-ignore. Not parallel: the canary is
// process-wide.
func TestNewInserterChoosesOnce(t *testing.T) {
	t.Cleanup(func() { _ = canary.Arm("") })
	if got := NewInserter().sql; got != insertSQL {
		t.Errorf("no canary: %q", got)
	}
	if err := canary.Arm(canary.PlainInsert); err != nil {
		t.Fatal(err)
	}
	in := NewInserter()
	_ = canary.Arm("")
	if in.sql != insertSQLPlain {
		t.Errorf("PlainInsert armed: %q", in.sql)
	}
}

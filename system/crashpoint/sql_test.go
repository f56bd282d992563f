package crashpoint_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/outboxchaos/outboxchaos/system/crashpoint"
	"github.com/outboxchaos/outboxchaos/system/testenv"
)

// TestTracerSeesStatementsAndCommits: with the tracer on a real
// connection, every statement of a transaction, its begin and its commit
// reach both sides, under the names SQLStep gives them.
func TestTracerSeesStatementsAndCommits(t *testing.T) {
	testenv.Require(t)
	path := filepath.Join(t.TempDir(), "sql.trace")
	t.Setenv(crashpoint.EnvVar, "")
	t.Setenv(crashpoint.TraceEnvVar, path)
	if err := crashpoint.ArmFromEnv(); err != nil {
		t.Fatal(err)
	}
	defer crashpoint.Disarm()
	ctx := context.Background()
	cc, err := pgx.ParseConfig(testenv.PGURL())
	if err != nil {
		t.Fatal(err)
	}
	cc.Tracer = crashpoint.Tracer{}
	conn, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	const q = `SELECT 1 + $1::int`
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		var n int
		return tx.QueryRow(ctx, q, 1).Scan(&n)
	})
	if err != nil {
		t.Fatal(err)
	}
	crashpoint.Disarm()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	step, _ := crashpoint.SQLStep(q)
	want := []string{"sql:begin:before 1", "sql:begin:after 1", step + ":before 1", step + ":after 1", "sql:commit:before 1", "sql:commit:after 1"}
	if got := strings.Split(strings.TrimSpace(string(b)), "\n"); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("trace %q, want %q", got, want)
	}
}

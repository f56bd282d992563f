package month_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/outboxchaos/outboxchaos/audit"
	"github.com/outboxchaos/outboxchaos/audit/month"
	"github.com/outboxchaos/outboxchaos/system/testenv"
)

// Found counts an audit's violations by invariant, of those it judged.
func Found(res audit.Result) map[string]int {
	out := map[string]int{}
	for _, v := range res.Invariants {
		if v.NotJudged == "" {
			out[v.Name] = len(v.Findings)
		}
	}
	return out
}

// A generated month holds exactly its planted anomalies: the audit, read
// in chunks that split the month, finds each where it was planted and
// nothing else; and a month planted with nothing passes.
func TestMonthHoldsWhatWasPlanted(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		planted month.Planted
	}{{"planted", month.DefaultPlanted}, {"clean", month.Planted{}}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			db := testenv.NewMigratedSchema(t)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			conn, err := pgx.Connect(ctx, db.URL)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(context.Background())
			files, err := month.Write(ctx, conn, t.TempDir(), month.Spec{Rows: 3000, Seed: 5, Planted: c.planted})
			if err != nil {
				t.Fatal(err)
			}
			res, err := audit.Run(ctx, audit.Options{Query: audit.Query{URL: db.URL, Schema: db.Schema, AllowWriteRole: true},
				ReportPath: files.Report, AlertsPath: files.Alerts, Settings: audit.Defaults(), ChunkRows: 700})
			if err != nil {
				t.Fatal(err)
			}
			if diff := c.planted.Found(Found(res)); diff != "" {
				t.Errorf("the audit's findings differ from what was planted: %s\n%v", diff, res.Invariants)
			}
			if res.Outbox != 3000 || res.Fates["delivered once"] < 3000-40 {
				t.Errorf("read %d outbox rows, fates %v", res.Outbox, res.Fates)
			}
		})
	}
}

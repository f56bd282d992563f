package audit_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/outboxchaos/outboxchaos/audit"
	"github.com/outboxchaos/outboxchaos/audit/audittest"
	"github.com/outboxchaos/outboxchaos/checker"
	"github.com/outboxchaos/outboxchaos/history"
	"github.com/outboxchaos/outboxchaos/system/testenv"
)

// run audits db with the files, as the command would.
func run(t *testing.T, url, schema string, f audittest.Files, allowWrite bool) (audit.Result, error) {
	t.Helper()
	return runInChunks(t, url, schema, f, allowWrite, 0)
}

// runInChunks audits as run does, reading chunks of rows outbox ids (0:
// the default).
func runInChunks(t *testing.T, url, schema string, f audittest.Files, allowWrite bool, rows int64) (audit.Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return audit.Run(ctx, audit.Options{Query: audit.Query{URL: url, Schema: schema, AllowWriteRole: allowWrite},
		ReportPath: f.Report, AlertsPath: f.Alerts, Settings: audit.Defaults(), ChunkRows: rows})
}

// A clean data set passes every judged invariant, as a read-only role,
// and the messages in flight within their deadlines are set aside, not
// judged stuck or lost.
func TestAuditCleanDataSetPasses(t *testing.T) {
	t.Parallel()
	db := testenv.NewMigratedSchema(t)
	files := audittest.Clean(t, db, t.TempDir())
	res, err := run(t, audittest.ReadOnlyRole(t, db), db.Schema, files, false)
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK() {
		var b strings.Builder
		_ = res.Markdown(&b)
		t.Fatalf("clean data set: broken %v\n%s", res.Broken(), b.String())
	}
	for _, mid := range []string{checker.MessageID(6), checker.MessageID(7), checker.MessageID(8), checker.MessageID(9)} {
		if res.InFlight[mid] == "" {
			t.Errorf("%s not set aside as in flight: %v", mid, res.InFlight)
		}
	}
	if len(res.InFlight) != 4 {
		t.Errorf("in flight: %v, want 4 messages", res.InFlight)
	}
	if res.Fates[checker.FateOnce] != 4 || res.Fates[checker.FateLostVisibly] != 1 {
		t.Errorf("fates %v: want 4 delivered once, 1 lost visibly", res.Fates)
	}
}

// Every planted anomaly is found, each by its invariant, exactly: the
// right number of violations naming the right messages, and nothing
// else broken; whether the audit reads its rows whole or in chunks as
// small as one outbox id (the planted messages in different chunks from
// their rows' report lines and alerts, found by dedup key or message_id).
func TestAuditFindsEachPlantedAnomalyExactly(t *testing.T) {
	t.Parallel()
	db := testenv.NewMigratedSchema(t)
	files, want := audittest.Planted(t, db, t.TempDir())
	for _, rows := range []int64{0, 1, 3} {
		t.Run(fmt.Sprintf("chunks of %d", rows), func(t *testing.T) { plantedFound(t, db, files, want, rows) })
	}
}

func plantedFound(t *testing.T, db *testenv.DB, files audittest.Files, want map[string]int, rows int64) {
	res, err := runInChunks(t, db.URL, db.Schema, files, true, rows)
	if err != nil {
		t.Fatal(err)
	}
	named := map[string][]string{
		"nothing-unexpected":    {"notification-outbox-999999"},
		"nothing-twice":         {"notification-outbox-11", "notification-outbox-12"},
		"nothing-lost-silently": {"notification-outbox-13"},
		"nothing-stuck":         {"notification-outbox-16", "notification-outbox-17"},
		"settlements-agree":     {"notification-outbox-15"},
		"right-time":            {"notification-outbox-19"},
		"true-alerts":           {"notification-outbox-14", "notification-outbox-15"},
		"statuses-agree":        {"notification-outbox-14"},
		"errors-settled":        {"notification-outbox-18"},
	}
	for _, v := range res.Invariants {
		if v.NotJudged != "" {
			if want[v.Name] > 0 {
				t.Errorf("%s not judged: %s", v.Name, v.NotJudged)
			}
			continue
		}
		var mids []string
		for _, f := range v.Findings {
			if len(f.Messages) == 0 {
				t.Errorf("%s: %q names no message", v.Name, f.Detail)
			}
			for _, m := range f.Messages {
				mids = append(mids, m.MessageID)
			}
		}
		slices.Sort(mids)
		if len(v.Findings) != want[v.Name] || !slices.Equal(mids, named[v.Name]) {
			t.Errorf("%s: %d violations naming %v, want %d naming %v: %v", v.Name, len(v.Findings), mids, want[v.Name], named[v.Name], v.Findings)
		}
	}
	// A violation carries its rows and report lines: both copies of the
	// message sent twice by dedup key, the stuck row's lease.
	twice, _ := res.Verdict("nothing-twice")
	for _, f := range twice.Findings {
		m := f.Messages[0]
		if m.Outbox == nil || len(m.Inbox) != 1 || len(m.Report) != 2 {
			t.Errorf("nothing-twice %s: outbox %v, %d inbox rows, %d report lines; want the row, 1, 2", m.MessageID, m.Outbox, len(m.Inbox), len(m.Report))
		}
	}
	var page strings.Builder
	if err := res.Markdown(&page); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"report line 6: `refkey=legacy-12", "claimed_until=", "## nothing-twice: 2 violations (delivered twice)", "**FAIL**"} {
		if !strings.Contains(page.String(), s) {
			t.Errorf("page has no %q:\n%s", s, page.String())
		}
	}
}

// A role that may write the audited tables is refused, naming the table
// and the flag; --allow-write-role lets it through.
func TestAuditRefusesAWritableRole(t *testing.T) {
	t.Parallel()
	db := testenv.NewMigratedSchema(t)
	files := audittest.Clean(t, db, t.TempDir())
	_, err := run(t, db.URL, db.Schema, files, false)
	var refused *audit.RefusedError
	if !errors.As(err, &refused) || !strings.Contains(err.Error(), "notification_outbox") || !strings.Contains(err.Error(), "--allow-write-role") {
		t.Fatalf("err %v: want a refusal naming the table and --allow-write-role", err)
	}
	if _, err := run(t, db.URL, db.Schema, files, true); err != nil {
		t.Fatalf("with --allow-write-role: %v", err)
	}
}

// A schema without the tables, a malformed report line and an
// unreachable database are not judged, each saying why.
func TestAuditCannotJudge(t *testing.T) {
	t.Parallel()
	db := testenv.NewSchema(t)
	dir := t.TempDir()
	ok := audittest.Files{Report: audittest.WriteCSV(t, dir)}
	bad := audittest.Files{Report: audittest.WriteFile(t, dir, "bad.csv", "refkey,status,at\nnotification-outbox-1,SENT,2026-01-01T09:00:00Z\nnotification-outbox-2,SENT,yesterday\n")}
	for _, c := range []struct {
		name, url string
		files     audittest.Files
		want      string
	}{
		{"missing table", db.URL, ok, "table " + db.Schema + ".notification_outbox does not exist"},
		{"malformed line", db.URL, bad, "bad.csv: line 3: time \"yesterday\""},
		{"unreachable", "postgres://postgres@127.0.0.1:1/test?sslmode=disable", ok, "unreachable"},
	} {
		_, err := run(t, c.url, db.Schema, c.files, true)
		var nj *audit.NotJudgedError
		if !errors.As(err, &nj) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v; want not judged, saying %q", c.name, err, c.want)
		}
	}
}

// Each malformed line is named by its number, in either format.
func TestAuditReportLineNumbers(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ format, text, want string }{
		{audit.FormatCSV, "refkey,status\na,SENT\n,SENT\n", "line 3: no refkey"},
		{audit.FormatCSV, "refkey,status\na,SENT\nb,SENT,extra\n", "line 3: "},
		{audit.FormatCSV, "refkey,status\na,SENT\n\nb,DELIVERED\n", "line 4: status \"DELIVERED\""},
		{audit.FormatCSV, "msg,status\n", "line 1: no \"refkey\" column"},
		{audit.FormatJSONL, "{\"refkey\":\"a\"}\n\n{\"refkey\":\n", "line 3: not a JSON object"},
		{audit.FormatJSONL, "{\"refkey\":\"a\",\"at\":\"2026-01-01T09:00:00+09:00\"}\n{\"status\":\"SENT\"}\n", "line 2: no refkey"},
	} {
		_, err := audit.ReadReport(strings.NewReader(c.text), c.format, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %q: err %v, want %q", c.format, c.text, err, c.want)
		}
	}
	cols, err := audit.ParseColumns("refkey=msg_id,at=delivered_at")
	if err != nil {
		t.Fatal(err)
	}
	lines, err := audit.ReadReport(strings.NewReader("msg_id,delivered_at\nx,2026-01-01T09:00:00+09:00\n"), audit.FormatCSV, cols)
	if err != nil || len(lines) != 1 || lines[0].RefKey != "x" || lines[0].Status != audit.ReportSent || lines[0].Line != 2 {
		t.Errorf("mapped columns: %v, %v", lines, err)
	}
}

// The alert log takes the pipeline's alerts or the webhook's bodies, and
// names a bad line.
func TestAuditAlertLog(t *testing.T) {
	t.Parallel()
	got, err := audit.ReadAlerts(strings.NewReader(`{"kind":"EXPIRED","outbox_id":3}` + "\n" +
		`{"text":":rotating_light: PARKED","outboxchaos":{"kind":"PARKED","message_id":"notification-outbox-4","reason":"DELIVERY_LIMIT"}}` + "\n"))
	if err != nil || len(got) != 2 || got[0].OutboxID != 3 || got[1].Kind != history.AlertParked || got[1].Reason != "DELIVERY_LIMIT" {
		t.Errorf("alerts %v, %v", got, err)
	}
	if _, err := audit.ReadAlerts(strings.NewReader("{\"kind\":\"EXPIRED\"}\n{\"outbox_id\":3}\n")); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("an alert without a kind: err %v", err)
	}
}

// The audit writes its page (and JSON) where it is told, and the JSON
// holds each invariant's verdict.
func TestAuditWritesItsPages(t *testing.T) {
	t.Parallel()
	res := audit.Judge(audit.Build(audit.Data{Outbox: []audit.OutboxRecord{{ID: 1, DedupKey: "GRADE_RENEWAL:1", Kind: "GRADE_RENEWAL", Status: "PUBLISHED"}},
		Inbox:  []audit.InboxRecord{{ID: 1, MessageID: checker.MessageID(1), OutboxID: 1, Status: "SENT"}},
		Report: []audit.ReportLine{{Line: 2, RefKey: checker.MessageID(1), Status: audit.ReportSent}}}, audit.Defaults()), audit.Defaults())
	dir := filepath.Join(t.TempDir(), "out")
	paths, err := res.Write(dir, true)
	if err != nil || len(paths) != 2 {
		t.Fatalf("write: %v %v", paths, err)
	}
	js, err := os.ReadFile(filepath.Join(dir, "audit.json"))
	if err != nil || !regexp.MustCompile(`"name": "nothing-twice",\s+"doc": "[^"]+",\s+"category": "delivered twice",\s+"valid": true`).Match(js) {
		t.Errorf("audit.json: %v\n%s", err, js)
	}
}

// Every checker invariant is one the audit knows how to feed, or says
// why not: a new invariant must be placed.
func TestAuditKnowsEveryInvariant(t *testing.T) {
	t.Parallel()
	for _, inv := range checker.Invariants {
		if !audit.Known(inv.Name) {
			t.Errorf("the audit does not place checker invariant %s: judge it or say why not (judge.go, uses)", inv.Name)
		}
	}
}

// --from and --to bound the outbox rows by created_at; inbox rows and
// report lines follow their rows, and a line of a row outside the range,
// or of no row and dated outside it, is left out and counted. A schema
// without a members table is audited all the same.
func TestAuditRange(t *testing.T) {
	t.Parallel()
	db := testenv.NewMigratedSchema(t)
	if _, err := db.Pool.Exec(context.Background(), `DROP TABLE members`); err != nil {
		t.Fatal(err)
	}
	now := audittest.Now()
	from, to := now.Add(-10*time.Hour), now.Add(-5*time.Hour)
	audittest.SeedOutbox(t, db,
		audittest.Outbox{ID: 1, Created: from.Add(-time.Hour)}, // before
		audittest.Outbox{ID: 2, Created: from},                 // in (inclusive)
		audittest.Outbox{ID: 3, Created: to.Add(-time.Minute)}, // in
		audittest.Outbox{ID: 4, Created: to},                   // after (exclusive)
	)
	audittest.SeedInbox(t, db, audittest.Inbox{OutboxID: 1, Created: from.Add(-time.Hour)}, audittest.Inbox{OutboxID: 2, Created: from},
		audittest.Inbox{OutboxID: 3, Created: to.Add(-time.Minute)}, audittest.Inbox{OutboxID: 4, Created: to})
	dir := t.TempDir()
	files := audittest.Files{Report: audittest.WriteCSV(t, dir,
		audittest.Line{RefKey: checker.MessageID(1), At: from},
		audittest.Line{RefKey: checker.MessageID(1), At: from}, // twice, but outside the range
		audittest.Line{RefKey: checker.MessageID(2), At: from},
		audittest.Line{RefKey: checker.MessageID(3), At: to},
		audittest.Line{RefKey: checker.MessageID(4), At: to},
		audittest.Line{RefKey: "stray-before", At: from.Add(-time.Hour)}, // no row, dated outside
		audittest.Line{RefKey: "stray-inside", At: from.Add(time.Hour)},  // no row, dated inside
	)}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := audit.Run(ctx, audit.Options{Query: audit.Query{URL: db.URL, Schema: db.Schema, From: from, To: to, AllowWriteRole: true},
		ReportPath: files.Report, Settings: audit.Defaults()})
	if err != nil {
		t.Fatal(err)
	}
	if res.Outbox != 2 || res.Inbox != 2 || res.Report != 3 || res.OutOfRange != 4 {
		t.Errorf("read %d outbox rows, %d inbox rows, %d report lines (%d out of range); want 2, 2, 3 (4)", res.Outbox, res.Inbox, res.Report, res.OutOfRange)
	}
	if got := res.Broken(); !slices.Equal(got, []string{"nothing-unexpected"}) {
		t.Errorf("broken %v, want only nothing-unexpected (the stray line inside the range)", got)
	}
}

// An audit read in chunks of any size finds what one read whole finds:
// the same counts, fates and violations of every invariant.
func TestAuditInChunksAgrees(t *testing.T) {
	t.Parallel()
	db := testenv.NewMigratedSchema(t)
	files, _ := audittest.Planted(t, db, t.TempDir())
	summary := func(rows int64) string {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		res, err := audit.Run(ctx, audit.Options{Query: audit.Query{URL: db.URL, Schema: db.Schema, AllowWriteRole: true},
			ReportPath: files.Report, AlertsPath: files.Alerts, Settings: audit.Defaults(), ChunkRows: rows})
		if err != nil {
			t.Fatalf("chunks of %d: %v", rows, err)
		}
		var b strings.Builder
		fmt.Fprintf(&b, "outbox %d inbox %d report %d out-of-range %d alerts %d fates %v in-flight %v\n",
			res.Outbox, res.Inbox, res.Report, res.OutOfRange, res.Alerts, res.Fates, res.InFlight)
		for _, v := range res.Invariants {
			var details []string
			for _, f := range v.Findings {
				details = append(details, f.Detail)
			}
			slices.Sort(details)
			fmt.Fprintf(&b, "%s valid=%v not-judged=%q %q\n", v.Name, v.Valid, v.NotJudged, details)
		}
		return b.String()
	}
	whole := summary(1 << 40)
	for _, rows := range []int64{1, 2, 3, 7} {
		if got := summary(rows); got != whole {
			t.Errorf("chunks of %d ids:\n%s\nwhole:\n%s", rows, got, whole)
		}
	}
}

// A schema whose tables and columns are named otherwise is read through
// --names: the same planted anomalies are found; a name the audit does not
// read is refused with what it reads.
func TestAuditReadsTablesNamedOtherwise(t *testing.T) {
	t.Parallel()
	db := testenv.NewMigratedSchema(t)
	files, want := audittest.Planted(t, db, t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, stmt := range []string{
		`ALTER TABLE notification_outbox RENAME TO sms_outbox`,
		`ALTER TABLE sms_outbox RENAME COLUMN created_at TO inserted_at`,
		`ALTER TABLE sms_outbox ADD COLUMN member_no BIGINT`,
		`UPDATE sms_outbox SET member_no = (payload->>'member_id')::bigint, payload = payload - 'member_id'`,
		`ALTER TABLE notification_histories RENAME TO sms_log`,
		`ALTER TABLE sms_log RENAME COLUMN message_id TO msg_id`,
	} {
		if _, err := db.Pool.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	names, err := audit.ParseNames("outbox=sms_outbox, outbox.created_at=inserted_at, outbox.member_id=member_no, inbox=sms_log, inbox.message_id=msg_id")
	if err != nil {
		t.Fatal(err)
	}
	res, err := audit.Run(ctx, audit.Options{Query: audit.Query{URL: db.URL, Schema: db.Schema, AllowWriteRole: true, Names: names},
		ReportPath: files.Report, AlertsPath: files.Alerts, Settings: audit.Defaults(), ChunkRows: 3})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range res.Invariants {
		if v.NotJudged == "" && len(v.Findings) != want[v.Name] {
			t.Errorf("%s: %d violations, want %d: %v", v.Name, len(v.Findings), want[v.Name], v.Findings)
		}
	}
	if _, err := audit.Run(ctx, audit.Options{Query: audit.Query{URL: db.URL, Schema: db.Schema, AllowWriteRole: true},
		ReportPath: files.Report, Settings: audit.Defaults()}); err == nil || !strings.Contains(err.Error(), "--names") {
		t.Errorf("the design's names on a schema named otherwise: %v, want a missing table pointing at --names", err)
	}
	for bad, msg := range map[string]string{"outbox.colour=x": `no column "colour"`, "ledger=x": `unknown table "ledger"`, "outbox": "want table=name"} {
		if _, err := audit.ParseNames(bad); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("ParseNames(%q) = %v, want %q", bad, err, msg)
		}
	}
}

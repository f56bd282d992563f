// Package month writes a month of a busy pipeline's data for the audit to
// judge: outbox rows, inbox rows and the vendor's delivery report, a
// million of each if asked, all delivered once but for anomalies planted
// in known numbers. The audit must find exactly the planted ones, in the
// time and memory a real month allows (bench measures it).
package month

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/outboxchaos/outboxchaos/auditor"
	"github.com/outboxchaos/outboxchaos/checker"
	"github.com/outboxchaos/outboxchaos/history"
)

// Planted are the anomalies of each kind a month holds, by the number of
// violations each invariant must find.
type Planted struct {
	Twice       int // a second report line for a delivered message
	Lost        int // published, no inbox row, no report line, no alert
	FalseAlarms int // EXPIRED with its alert, and still delivered
	Stuck       int // PUBLISHING long past its lease
	Night       int // an advert delivered at 22:00 in Seoul
	Stray       int // a report line naming no outbox row
}

// DefaultPlanted is a few of each.
var DefaultPlanted = Planted{Twice: 7, Lost: 5, FalseAlarms: 3, Stuck: 4, Night: 2, Stray: 6}

// Want is how many violations each invariant must find in a month with
// p planted; every other invariant judged must find none.
func (p Planted) Want() map[string]int {
	return map[string]int{
		"nothing-twice":         p.Twice,
		"nothing-lost-silently": p.Lost,
		"true-alerts":           p.FalseAlarms,
		"statuses-agree":        p.FalseAlarms,
		"nothing-stuck":         p.Stuck,
		"right-time":            p.Night,
		"nothing-unexpected":    p.Stray,
	}
}

func (p Planted) total() int { return p.Twice + p.Lost + p.FalseAlarms + p.Stuck + p.Night + p.Stray }

// Files are the report and the alert log a month comes with.
type Files struct {
	Report, Alerts string
}

// Spec is one month: n outbox rows, ids 1 to n, created evenly over the
// 30 days before now minus two hours, each delivered once at its creation
// but for the planted anomalies, drawn from seed.
type Spec struct {
	Rows    int
	Seed    uint64
	Planted Planted
	Now     time.Time
}

// at is row id's creation time (and its delivery's).
func (s Spec) at(id int64) time.Time {
	start := s.Now.Add(-2*time.Hour - 30*24*time.Hour)
	step := 30 * 24 * time.Hour / time.Duration(s.Rows)
	return start.Add(time.Duration(id) * step).Truncate(time.Millisecond)
}

// plan picks the planted rows: distinct ids, one set per kind of anomaly.
type plan struct {
	twice, lost, alarms, stuck, night []int64
}

func (s Spec) plan() (plan, error) {
	if s.Planted.total()-s.Planted.Stray > s.Rows {
		return plan{}, fmt.Errorf("%d rows cannot hold %d planted anomalies", s.Rows, s.Planted.total())
	}
	rng := rand.New(rand.NewPCG(s.Seed, 0x6d6f6e7468))
	seen := map[int64]bool{}
	var pickBelow func(n int, below int64) []int64
	// An advert is moved to 10:00 on its day: taken from the first 90 %
	// of the month, it stays in the past.
	pick := func(n int) []int64 { return pickBelow(n, int64(s.Rows)) }
	pickBelow = func(n int, below int64) []int64 {
		var out []int64
		for len(out) < n {
			id := 1 + rng.Int64N(below)
			if !seen[id] {
				seen[id] = true
				out = append(out, id)
			}
		}
		slices.Sort(out)
		return out
	}
	p := plan{twice: pick(s.Planted.Twice), lost: pick(s.Planted.Lost), alarms: pick(s.Planted.FalseAlarms),
		stuck: pick(s.Planted.Stuck), night: pickBelow(s.Planted.Night, max(int64(s.Rows)*9/10, 1))}
	return p, nil
}

// Write fills the design's tables in the schema conn's search_path names
// (migrated, empty) and writes the report and alert log into dir.
func Write(ctx context.Context, conn *pgx.Conn, dir string, s Spec) (Files, error) {
	if s.Rows < 1 {
		return Files{}, fmt.Errorf("a month needs at least one row, not %d", s.Rows)
	}
	if s.Now.IsZero() {
		s.Now = time.Now().UTC().Truncate(time.Second)
	}
	p, err := s.plan()
	if err != nil {
		return Files{}, err
	}
	if err := s.fill(ctx, conn, p); err != nil {
		return Files{}, err
	}
	files := Files{Report: filepath.Join(dir, "report.csv"), Alerts: filepath.Join(dir, "alerts.jsonl")}
	if err := s.writeReport(files.Report, p); err != nil {
		return Files{}, err
	}
	if err := writeAlerts(files.Alerts, p); err != nil {
		return Files{}, err
	}
	return files, nil
}

// fill inserts the rows in a few statements: every row as delivered, then
// the planted ones changed.
func (s Spec) fill(ctx context.Context, conn *pgx.Conn, p plan) error {
	start := s.at(0)
	step := s.at(1).Sub(start)
	// An advert is created, published and delivered at 10:00 in Seoul on
	// its day (inside its hours), a night one delivered at 22:00 (see
	// writeReport).
	stmts := []struct {
		what string
		sql  string
		args []any
	}{
		{"outbox rows", `INSERT INTO notification_outbox (id, dedup_key, kind, payload, scheduled_date, status, attempts, next_attempt_at, created_at, updated_at, published_at)
			SELECT g, $4 || ':' || g, $4, jsonb_build_object('kind', $4::text, 'member_id', g, 'phone', '010-' || lpad(g::text, 8, '0')),
				(t AT TIME ZONE 'Asia/Seoul')::date, 'PUBLISHED', 1, t, t, t, t
			FROM generate_series(1, $1::bigint) g, LATERAL (SELECT $2::timestamptz + g * $3::interval) x(t)`,
			[]any{s.Rows, start, step, auditor.GradeRenewal}},
		{"night adverts", `UPDATE notification_outbox SET kind = $2, dedup_key = $2 || ':' || id, payload = payload || jsonb_build_object('kind', $2::text),
			created_at = ((created_at AT TIME ZONE 'Asia/Seoul')::date + time '10:00') AT TIME ZONE 'Asia/Seoul',
			updated_at = ((created_at AT TIME ZONE 'Asia/Seoul')::date + time '10:00') AT TIME ZONE 'Asia/Seoul',
			published_at = ((created_at AT TIME ZONE 'Asia/Seoul')::date + time '10:00') AT TIME ZONE 'Asia/Seoul',
			next_attempt_at = ((created_at AT TIME ZONE 'Asia/Seoul')::date + time '10:00') AT TIME ZONE 'Asia/Seoul'
			WHERE id = ANY($1)`, []any{p.night, auditor.MissionRemind}},
		{"false alarms", `UPDATE notification_outbox SET status = 'EXPIRED', published_at = NULL WHERE id = ANY($1)`, []any{p.alarms}},
		{"stuck rows", `UPDATE notification_outbox SET status = 'PUBLISHING', published_at = NULL, claimed_by = 'relay-1',
			claimed_until = created_at + interval '15 minutes' WHERE id = ANY($1)`, []any{p.stuck}},
		{"inbox rows", `INSERT INTO notification_histories (message_id, outbox_id, dedup_key, kind, phone, status, created_at, updated_at)
			SELECT 'notification-outbox-' || id, id, dedup_key, kind, payload->>'phone', 'SENT', created_at, created_at
			FROM notification_outbox WHERE status = 'PUBLISHED' AND NOT id = ANY($1) ORDER BY id`, []any{p.lost}},
		{"statistics", `ANALYZE notification_outbox, notification_histories`, nil},
	}
	for _, st := range stmts {
		if _, err := conn.Exec(ctx, st.sql, st.args...); err != nil {
			return fmt.Errorf("month: %s: %w", st.what, err)
		}
	}
	return nil
}

// writeReport writes one SENT line per delivered row, in time order, and
// the planted lines: a second line for each twice, a 22:00 line for each
// night advert, lines for ids past the last row.
func (s Spec) writeReport(path string, p plan) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("month: %w", err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	skip := map[int64]bool{}
	for _, id := range slices.Concat(p.lost, p.stuck) {
		skip[id] = true
	}
	twice, night := map[int64]bool{}, map[int64]bool{}
	for _, id := range p.twice {
		twice[id] = true
	}
	for _, id := range p.night {
		night[id] = true
	}
	line := func(id int64, at time.Time) {
		fmt.Fprintf(w, "%s,SENT,%s\n", checker.MessageID(id), at.UTC().Format(time.RFC3339Nano))
	}
	fmt.Fprintln(w, "refkey,status,at")
	for id := int64(1); id <= int64(s.Rows); id++ {
		switch {
		case skip[id]:
			continue
		case night[id]:
			d := s.at(id).In(auditor.Seoul)
			line(id, time.Date(d.Year(), d.Month(), d.Day(), 22, 0, 0, 0, auditor.Seoul))
			continue
		}
		line(id, s.at(id).Add(2*time.Second))
		if twice[id] {
			line(id, s.at(id).Add(time.Minute))
		}
	}
	for i := range s.Planted.Stray {
		line(int64(s.Rows)+1000+int64(i), s.at(int64(s.Rows)))
	}
	if err := w.Flush(); err != nil {
		_ = f.Close()
		return fmt.Errorf("month: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("month: %w", err)
	}
	return nil
}

// writeAlerts writes the EXPIRED alert each false alarm raised.
func writeAlerts(path string, p plan) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("month: %w", err)
	}
	enc := json.NewEncoder(f)
	for _, id := range p.alarms {
		if err := enc.Encode(checker.AlertRecord{Kind: history.AlertExpired, OutboxID: id, MessageID: checker.MessageID(id)}); err != nil {
			_ = f.Close()
			return fmt.Errorf("month: %w", err)
		}
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("month: %w", err)
	}
	return nil
}

// Found compares what an audit found (violations by invariant, of those
// it judged) with what p planted: "" when they agree exactly, else what
// differs.
func (p Planted) Found(found map[string]int) string {
	want := p.Want()
	var diff []string
	for name, n := range found {
		if n != want[name] {
			diff = append(diff, fmt.Sprintf("%s found %d, planted %d", name, n, want[name]))
		}
	}
	for name, n := range want {
		if _, ok := found[name]; !ok && n > 0 {
			diff = append(diff, fmt.Sprintf("%s not judged, planted %d", name, n))
		}
	}
	slices.Sort(diff)
	if len(diff) == 0 {
		return ""
	}
	return fmt.Sprint(diff)
}

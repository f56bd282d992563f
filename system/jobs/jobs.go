// Package jobs owns the batch jobs of design §2: they read business rows and
// their only write is the outbox insert-ignore, in one transaction per job,
// so a job that dies before commit leaves nothing and its re-run recomputes
// the same dedup keys. The anniversary-coupon job is the exception: it
// issues the coupon first, then inserts the outbox row; if that insert fails
// the notification is deliberately lost and an alert is raised.
//
// Seed writes deterministic business rows (members, registered test numbers,
// grade histories, award winnings, mission and lock-in targets, anniversary
// targets) for a given number of notifications per kind.
package jobs

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxchaos/outboxchaos/history"
	"github.com/outboxchaos/outboxchaos/system/alert"
	"github.com/outboxchaos/outboxchaos/system/canary"
	"github.com/outboxchaos/outboxchaos/system/clock"
	"github.com/outboxchaos/outboxchaos/system/killpoint"
	"github.com/outboxchaos/outboxchaos/system/notification"
	"github.com/outboxchaos/outboxchaos/system/outbox"
)

// Phone returns the deterministic phone number of member id.
func Phone(memberID int64) string { return fmt.Sprintf("010%08d", memberID) }

// Seed writes business rows producing perKind notifications of each kind in
// kinds (all kinds when empty), on the Seoul day of now. Members are
// 1..perKind; every member's number is registered. Seeding twice is a no-op.
func Seed(ctx context.Context, pool *pgxpool.Pool, now time.Time, perKind int, kinds []notification.Kind) error {
	if perKind < 0 {
		return fmt.Errorf("seed: per-kind count must not be negative, got %d", perKind)
	}
	if len(kinds) == 0 {
		kinds = notification.Kinds
	}
	day := clock.Date(now)
	month := day.Format("2006-01")
	tx, err := pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("seed: begin: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	for i := int64(1); i <= int64(perKind); i++ {
		if _, err := tx.Exec(ctx, `INSERT INTO members (id, name, phone) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
			i, fmt.Sprintf("회원%d", i), Phone(i)); err != nil {
			return fmt.Errorf("seed member %d: %w", i, err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO registered_numbers (phone) VALUES ($1) ON CONFLICT DO NOTHING`, Phone(i)); err != nil {
			return fmt.Errorf("seed registered number %d: %w", i, err)
		}
		for _, k := range kinds {
			var q string
			var args []any
			switch k {
			case notification.GradeRenewal:
				q, args = `INSERT INTO grade_histories (id, member_id, grade, month) VALUES ($1, $1, 'GOLD', $2) ON CONFLICT DO NOTHING`, []any{i, month}
			case notification.MonthlyAwardsWinning, notification.MonthlyAwardsClosing:
				q, args = `INSERT INTO award_winnings (id, member_id, award, deadline) VALUES ($1, $1, '이달의 상', $2) ON CONFLICT DO NOTHING`, []any{i, day.AddDate(0, 0, 3)}
			case notification.MissionReminder:
				q, args = `INSERT INTO mission_targets (day, member_id) VALUES ($1, $2) ON CONFLICT DO NOTHING`, []any{day, i}
			case notification.GradeLockIn:
				q, args = `INSERT INTO lock_in_targets (month, member_id) VALUES ($1, $2) ON CONFLICT DO NOTHING`, []any{month, i}
			case notification.AnniversaryCoupon:
				q, args = `INSERT INTO anniversary_targets (member_id, year) VALUES ($1, $2) ON CONFLICT DO NOTHING`, []any{i, day.Year()}
			default:
				return fmt.Errorf("seed: unknown notification kind %q", k)
			}
			if _, err := tx.Exec(ctx, q, args...); err != nil {
				return fmt.Errorf("seed %s row %d: %w", k, i, err)
			}
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("seed: commit: %w", err)
	}
	return nil
}

// Stats counts what the jobs did.
type Stats struct {
	Inserted, Existing, Lost int
}

// Runner runs the jobs. Build it with NewRunner; a Runner literal runs the
// production jobs whatever canary is armed.
type Runner struct {
	Pool   *pgxpool.Pool
	Clock  clock.Clock
	Alerts alert.Sender
	Log    *slog.Logger

	inserter outbox.Inserter // the outbox insert statement
	// AlsoEnqueue, if set, runs inside each business transaction after its
	// outbox inserts, with the dedup keys it inserted (none: not called):
	// a relay under test that has its own outbox (peers/) enqueues there
	// in the same transaction. An error rolls the transaction back as an
	// outbox insert's would.
	AlsoEnqueue func(ctx context.Context, tx pgx.Tx, dedupKeys []string) error
	// silentLoss leaves a lost anniversary notification without its alert
	// (the SilentAnniversary canary).
	silentLoss bool
	// doubleEnqueue also enqueues each grade renewal under a monthly key
	// of its member's (the DoubleEnqueue canary).
	doubleEnqueue bool
}

// NewRunner returns a runner; the armed canary, if any, chooses its outbox
// insert statement (PlainInsert) and whether a lost anniversary
// notification is alerted (SilentAnniversary).
func NewRunner(pool *pgxpool.Pool, clk clock.Clock, alerts alert.Sender, log *slog.Logger) *Runner {
	return &Runner{Pool: pool, Clock: clk, Alerts: alerts, Log: log,
		inserter: outbox.NewInserter(), silentLoss: canary.On(canary.SilentAnniversary), doubleEnqueue: canary.On(canary.DoubleEnqueue)}
}

// Run runs the job of each kind in kinds (all when empty).
func (r *Runner) Run(ctx context.Context, kinds []notification.Kind) (Stats, error) {
	if len(kinds) == 0 {
		kinds = notification.Kinds
	}
	var total Stats
	for _, k := range kinds {
		var st Stats
		var err error
		if k == notification.AnniversaryCoupon {
			st, err = r.anniversary(ctx)
		} else {
			st, err = r.insertJob(ctx, k)
		}
		if err != nil {
			return total, fmt.Errorf("job %s: %w", k, err)
		}
		r.Log.Info("job done", history.KeyEvent, history.Job, history.KeyKind, k, "inserted", st.Inserted, "existing", st.Existing, "lost", st.Lost)
		total.Inserted += st.Inserted
		total.Existing += st.Existing
		total.Lost += st.Lost
	}
	return total, nil
}

// entries computes the notifications of a kind from business rows.
func (r *Runner) entries(ctx context.Context, k notification.Kind) ([]outbox.Entry, error) {
	now := r.Clock.Now()
	day := clock.Date(now)
	sched := day.Format(time.DateOnly)
	var q string
	switch k {
	case notification.GradeRenewal:
		q = `SELECT g.id, m.id, m.name, m.phone, g.grade FROM grade_histories g JOIN members m ON m.id = g.member_id ORDER BY g.id`
	case notification.MonthlyAwardsWinning:
		q = `SELECT w.id, m.id, m.name, m.phone, w.award FROM award_winnings w JOIN members m ON m.id = w.member_id ORDER BY w.id`
	case notification.MonthlyAwardsClosing:
		q = `SELECT w.id, m.id, m.name, m.phone, w.award || '|' || w.deadline::text FROM award_winnings w JOIN members m ON m.id = w.member_id ORDER BY w.id`
	case notification.MissionReminder:
		q = `SELECT 0, m.id, m.name, m.phone, t.day::text FROM mission_targets t JOIN members m ON m.id = t.member_id WHERE t.day = $1 ORDER BY m.id`
	case notification.GradeLockIn:
		q = `SELECT 0, m.id, m.name, m.phone, t.month FROM lock_in_targets t JOIN members m ON m.id = t.member_id WHERE t.month = to_char($1::date, 'YYYY-MM') ORDER BY m.id`
	default:
		return nil, fmt.Errorf("no job for kind %q", k)
	}
	var args []any
	if k == notification.MissionReminder || k == notification.GradeLockIn {
		args = []any{day.Format(time.DateOnly)}
	}
	rows, err := r.Pool.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read business rows: %w", err)
	}
	defer rows.Close()
	var out []outbox.Entry
	for rows.Next() {
		var id, member int64
		var name, phone, extra string
		if err := rows.Scan(&id, &member, &name, &phone, &extra); err != nil {
			return nil, fmt.Errorf("scan business row: %w", err)
		}
		tpl, _ := notification.TemplateFor(k)
		p := notification.Payload{Kind: k, MemberID: member, Phone: phone, Template: tpl.Code,
			Variables: map[string]string{"name": name}, Advertising: k.Advertising(), ScheduledDate: sched}
		var key string
		switch k {
		case notification.GradeRenewal:
			key, p.Variables["grade"] = notification.GradeRenewalKey(id), extra
			if r.doubleEnqueue {
				out = append(out, outbox.Entry{DedupKey: fmt.Sprintf("%s:%s:%d", k, day.Format("2006-01"), member), Payload: p})
			}
		case notification.MonthlyAwardsWinning:
			key, p.Variables["award"] = notification.AwardsWinningKey(id), extra
		case notification.MonthlyAwardsClosing:
			award, deadline := extra, ""
			for i := len(extra) - 1; i >= 0; i-- {
				if extra[i] == '|' {
					award, deadline = extra[:i], extra[i+1:]
					break
				}
			}
			d, err := time.Parse(time.DateOnly, deadline)
			if err != nil {
				return nil, fmt.Errorf("award %d deadline %q: %w", id, deadline, err)
			}
			key = notification.AwardsClosingKey(id, d)
			p.Variables["award"], p.Variables["deadline"] = award, deadline
		case notification.MissionReminder:
			key = notification.MissionReminderKey(day, member)
		case notification.GradeLockIn:
			key = notification.GradeLockInKey(extra, member)
		}
		out = append(out, outbox.Entry{DedupKey: key, Payload: p})
	}
	return out, rows.Err()
}

// insertJob writes all entries of kind k in one transaction.
func (r *Runner) insertJob(ctx context.Context, k notification.Kind) (Stats, error) {
	var st Stats
	entries, err := r.entries(ctx, k)
	if err != nil {
		return st, err
	}
	now := r.Clock.Now()
	err = pgx.BeginFunc(ctx, r.Pool, func(tx pgx.Tx) error {
		st = Stats{}
		var inserted []string
		for _, e := range entries {
			ins, err := r.inserter.Enqueue(ctx, tx, now, e)
			if err != nil {
				return err
			}
			if ins {
				st.Inserted++
				inserted = append(inserted, e.DedupKey)
			} else {
				st.Existing++
			}
		}
		if err := r.alsoEnqueue(ctx, tx, inserted); err != nil {
			return err
		}
		killpoint.Hit(killpoint.JobBeforeCommit)
		return nil
	})
	if err != nil {
		return Stats{}, fmt.Errorf("enqueue %s: %w", k, err)
	}
	return st, nil
}

// alsoEnqueue runs AlsoEnqueue for the keys a transaction inserted.
func (r *Runner) alsoEnqueue(ctx context.Context, tx pgx.Tx, keys []string) error {
	if r.AlsoEnqueue == nil || len(keys) == 0 {
		return nil
	}
	if err := r.AlsoEnqueue(ctx, tx, keys); err != nil {
		return fmt.Errorf("enqueue into the relay under test's outbox: %w", err)
	}
	return nil
}

// anniversary issues each due coupon and enqueues its notification in one
// transaction, so a run that dies in between commits neither and its
// re-run issues and enqueues both. A failed outbox insert is rolled back
// to a savepoint: the coupon is still issued and the notification is lost
// on purpose (never twice) with an alert sent before the commit; a re-run
// does not resurrect it (an operator was told it is lost).
func (r *Runner) anniversary(ctx context.Context) (Stats, error) {
	var st Stats
	now := r.Clock.Now()
	rows, err := r.Pool.Query(ctx, `SELECT t.member_id, t.year, m.name, m.phone
		FROM anniversary_targets t JOIN members m ON m.id = t.member_id
		WHERE NOT EXISTS (SELECT 1 FROM coupons c WHERE c.member_id = t.member_id AND c.year = t.year)
		ORDER BY t.member_id`)
	if err != nil {
		return st, fmt.Errorf("read anniversary targets: %w", err)
	}
	type target struct {
		member      int64
		year        int
		name, phone string
	}
	var targets []target
	for rows.Next() {
		var t target
		if err := rows.Scan(&t.member, &t.year, &t.name, &t.phone); err != nil {
			rows.Close()
			return st, fmt.Errorf("scan anniversary target: %w", err)
		}
		targets = append(targets, t)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return st, fmt.Errorf("read anniversary targets: %w", err)
	}
	tpl, _ := notification.TemplateFor(notification.AnniversaryCoupon)
	for _, t := range targets {
		if err := pgx.BeginFunc(ctx, r.Pool, func(tx pgx.Tx) error {
			return r.issueCoupon(ctx, tx, now, tpl.Code, t.member, t.year, t.name, t.phone, &st)
		}); err != nil {
			return st, err
		}
	}
	return st, nil
}

// issueCoupon issues one coupon and enqueues its notification inside tx.
func (r *Runner) issueCoupon(ctx context.Context, tx pgx.Tx, now time.Time, template string, member int64, year int, name, phone string, st *Stats) error {
	var couponID int64
	err := tx.QueryRow(ctx, `INSERT INTO coupons (member_id, year, issued_at) VALUES ($1, $2, $3)
		ON CONFLICT (member_id, year) DO NOTHING RETURNING id`, member, year, now).Scan(&couponID)
	if err == pgx.ErrNoRows {
		return nil // issued by a concurrent run
	}
	if err != nil {
		return fmt.Errorf("issue coupon for member %d: %w", member, err)
	}
	killpoint.Hit(killpoint.JobAfterCoupon)
	e := outbox.Entry{DedupKey: notification.AnniversaryKey(couponID), Payload: notification.Payload{
		Kind: notification.AnniversaryCoupon, MemberID: member, Phone: phone, Template: template,
		Variables:     map[string]string{"name": name, "years": "1"},
		ScheduledDate: clock.Date(now).Format(time.DateOnly),
	}}
	if _, err := tx.Exec(ctx, `SAVEPOINT outbox_insert`); err != nil {
		return fmt.Errorf("savepoint before the outbox insert of %s: %w", e.DedupKey, err)
	}
	err = killpoint.Fail(killpoint.FailAnniversaryOutbox)
	if err == nil {
		var ins bool
		if ins, err = r.inserter.Enqueue(ctx, tx, now, e); err == nil && ins {
			err = r.alsoEnqueue(ctx, tx, []string{e.DedupKey})
		}
		if err == nil {
			if ins {
				st.Inserted++
			} else {
				st.Existing++
			}
			return nil
		}
	}
	if _, rerr := tx.Exec(ctx, `ROLLBACK TO SAVEPOINT outbox_insert`); rerr != nil {
		return fmt.Errorf("roll back the failed outbox insert of %s: %w", e.DedupKey, rerr)
	}
	st.Lost++
	r.Log.Error("anniversary outbox insert failed; notification lost on purpose", history.KeyEvent, history.AnniversaryLost,
		history.KeyDedupKey, e.DedupKey, "member_id", member, history.KeyErr, err)
	if !r.silentLoss {
		r.Alerts.Send(ctx, alert.Alert{Kind: history.AlertAnniversaryLost, DedupKey: e.DedupKey,
			Reason: err.Error(), At: now})
	}
	return nil
}

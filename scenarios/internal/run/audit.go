package run

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/outboxchaos/outboxchaos/auditor"
	"github.com/outboxchaos/outboxchaos/faults"
	"github.com/outboxchaos/outboxchaos/rig"
	"github.com/outboxchaos/outboxchaos/system/clock"
)

// harnessLog is the harness's own record of a run, for the auditor: the
// business rows it seeded, the jobs it started, the consent it withdrew
// and the pods whose clock it moved, each as the harness did it, never
// read back from a table the pipeline writes.
type harnessLog struct {
	mu     sync.Mutex
	rec    auditor.Record
	seeded bool
	rows   map[string]bool // the business rows written, by table and key
}

// initAudit starts the record with the run's settings.
func (e *Env) initAudit() {
	c := e.Cfg
	e.audit.rec = auditor.Record{Production: c.Production, Hours: auditor.Hours{
		PublishCutoff: c.AdPublishCutoff.Minutes(), Resume: c.AdResumeAt.Minutes(),
		SendFrom: c.AdSendFrom.Minutes(), SendUntil: c.AdSendUntil.Minutes()}}
	e.audit.rows = map[string]bool{}
}

// BusinessRows are the business rows that call for perKind notifications
// of each kind in kinds (every kind when empty) on the Seoul day of now:
// members 1..perKind, each with consent and a registered number, and one
// row per member in each table the kinds read. As in production, a grade
// history's and an award winning's ids are not their member's
// (gradeHistoryBase + member, awardBase + member): a job that keys by the
// wrong id enqueues under a key no business event has.
func BusinessRows(now time.Time, perKind int, kinds []string) auditor.Business {
	if len(kinds) == 0 {
		kinds = auditor.AllKinds
	}
	day := now.In(auditor.Seoul)
	date, month := day.Format(time.DateOnly), day.Format("2006-01")
	deadline := time.Date(day.Year(), day.Month(), day.Day()+3, 0, 0, 0, 0, time.UTC).Format(time.DateOnly)
	var b auditor.Business
	for i := int64(1); i <= int64(perKind); i++ {
		phone := fmt.Sprintf("010%08d", i)
		b.Members = append(b.Members, auditor.Member{ID: i, Name: fmt.Sprintf("회원%d", i), Phone: phone, Consent: true, Active: true})
		b.Registered = append(b.Registered, phone)
		for _, k := range kinds {
			switch k {
			case auditor.GradeRenewal:
				b.GradeHistories = append(b.GradeHistories, auditor.GradeHistory{ID: gradeHistoryBase + i, MemberID: i, Grade: "GOLD", Month: month})
			case auditor.AwardsWinning, auditor.AwardsClosing:
				b.AwardWinnings = append(b.AwardWinnings, auditor.AwardWinning{ID: awardBase + i, MemberID: i, Award: "이달의 상", Deadline: deadline})
			case auditor.MissionRemind:
				b.MissionTargets = append(b.MissionTargets, auditor.DayTarget{Day: date, MemberID: i})
			case auditor.GradeLockIn:
				b.LockInTargets = append(b.LockInTargets, auditor.MonthTarget{Month: month, MemberID: i})
			case auditor.Anniversary:
				b.Anniversaries = append(b.Anniversaries, auditor.YearTarget{MemberID: i, Year: day.Year()})
			}
		}
	}
	return b
}

// The first ids of the seeded grade histories and award winnings, after
// their members'.
const (
	gradeHistoryBase = 7000
	awardBase        = 9000
)

// SeedBusiness writes business rows into the run's schema, in one
// transaction, and records them once it committed: a row already written
// (same table, same key) is neither written nor recorded again. The
// database may be down by the run's own fault (a crash, a freeze): the
// harness's writes wait until it answers again, as the job that would
// have written them is run again until one completes.
func (e *Env) SeedBusiness(ctx context.Context, b auditor.Business) error {
	e.audit.mu.Lock()
	defer e.audit.mu.Unlock()
	var stmts []func(tx pgx.Tx) error
	var keys []string
	var records []func(seeded auditor.Seeding)
	rec := &e.audit.rec.Business
	add := func(key string, record func(auditor.Seeding), sql string, args ...any) {
		if e.audit.rows[key] || slices.Contains(keys, key) {
			return
		}
		keys, records = append(keys, key), append(records, record)
		stmts = append(stmts, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, sql+" ON CONFLICT DO NOTHING", args...); err != nil {
				return fmt.Errorf("seed %s: %w", key, err)
			}
			return nil
		})
	}
	for _, m := range b.Members {
		add(fmt.Sprintf("member %d", m.ID), func(auditor.Seeding) { rec.Members = append(rec.Members, m) },
			`INSERT INTO members (id, name, phone, sms_consent, active) VALUES ($1, $2, $3, $4, $5)`, m.ID, m.Name, m.Phone, m.Consent, m.Active)
	}
	for _, p := range b.Registered {
		add("registered "+p, func(auditor.Seeding) { rec.Registered = append(rec.Registered, p) }, `INSERT INTO registered_numbers (phone) VALUES ($1)`, p)
	}
	for _, g := range b.GradeHistories {
		add(fmt.Sprintf("grade history %d", g.ID), func(at auditor.Seeding) { g.Seeding = at; rec.GradeHistories = append(rec.GradeHistories, g) },
			`INSERT INTO grade_histories (id, member_id, grade, month) VALUES ($1, $2, $3, $4)`, g.ID, g.MemberID, g.Grade, g.Month)
	}
	for _, w := range b.AwardWinnings {
		add(fmt.Sprintf("award winning %d", w.ID), func(at auditor.Seeding) { w.Seeding = at; rec.AwardWinnings = append(rec.AwardWinnings, w) },
			`INSERT INTO award_winnings (id, member_id, award, deadline) VALUES ($1, $2, $3, $4::date)`, w.ID, w.MemberID, w.Award, w.Deadline)
	}
	for _, t := range b.MissionTargets {
		add(fmt.Sprintf("mission target %s %d", t.Day, t.MemberID), func(at auditor.Seeding) { t.Seeding = at; rec.MissionTargets = append(rec.MissionTargets, t) },
			`INSERT INTO mission_targets (day, member_id) VALUES ($1::date, $2)`, t.Day, t.MemberID)
	}
	for _, t := range b.LockInTargets {
		add(fmt.Sprintf("lock-in target %s %d", t.Month, t.MemberID), func(at auditor.Seeding) { t.Seeding = at; rec.LockInTargets = append(rec.LockInTargets, t) },
			`INSERT INTO lock_in_targets (month, member_id) VALUES ($1, $2)`, t.Month, t.MemberID)
	}
	for _, t := range b.Anniversaries {
		add(fmt.Sprintf("anniversary target %d %d", t.MemberID, t.Year), func(at auditor.Seeding) { t.Seeding = at; rec.Anniversaries = append(rec.Anniversaries, t) },
			`INSERT INTO anniversary_targets (member_id, year) VALUES ($1, $2)`, t.MemberID, t.Year)
	}
	e.audit.seeded = true
	if len(stmts) == 0 {
		return nil
	}
	err := rig.UntilDBAnswers(ctx, func(f string, a ...any) { e.Logf("harness", f, a...) }, "seed business rows", func() error {
		return pgx.BeginFunc(ctx, e.Pool, func(tx pgx.Tx) error {
			for _, s := range stmts {
				if err := s(tx); err != nil {
					return err
				}
			}
			return nil
		})
	})
	if err != nil {
		return err
	}
	at := auditor.Seeding{Seeded: time.Since(e.TL.Start())}
	for i, key := range keys {
		e.audit.rows[key] = true
		records[i](at)
	}
	return nil
}

// RecordJob records a batch job run the harness starts at t on its
// clock, for kinds (none: every kind).
func (e *Env) RecordJob(t time.Time, kinds []string) { e.recordJob(t, kinds) }

// recordJob records a job run and returns its index in the record.
func (e *Env) recordJob(t time.Time, kinds []string) int {
	e.audit.mu.Lock()
	defer e.audit.mu.Unlock()
	e.audit.rec.Jobs = append(e.audit.rec.Jobs, auditor.JobRun{At: time.Since(e.TL.Start()), Time: t, Kinds: slices.Clone(kinds)})
	return len(e.audit.rec.Jobs) - 1
}

// watchJob records, when job run i's pod p exits, the time on the clock
// its environment env gives it (the run's, or a clock fault's) — the job
// took its day somewhere between its start and then — and whether it
// exited non-zero.
func (e *Env) watchJob(i int, p *rig.Pod, env []string) {
	go func() {
		<-p.Done()
		e.endJob(i, env, p.ExitCode() != 0)
	}()
}

// endJob records job run i's End as now on its clock, and whether it
// failed.
func (e *Env) endJob(i int, env []string, failed bool) {
	now := e.Now()
	if c, ok := podClock(env); ok {
		now = c.Now()
	}
	e.audit.mu.Lock()
	defer e.audit.mu.Unlock()
	if e.audit.rec.Jobs[i].End.IsZero() {
		e.audit.rec.Jobs[i].End, e.audit.rec.Jobs[i].Failed = now, failed
	}
}

// beforeJob records a job pod's run, on the pod's clock (a clock fault
// in env moves it), and seeds the business rows its arguments call for:
// the pod is then told not to seed them itself. A caller that seeded
// them (SeedBusiness) and says so (--seed=false) is taken at its word.
func (e *Env) beforeJob(ctx context.Context, args, env []string) ([]string, int, error) {
	perKind, kinds := jobFlags(args)
	now := e.Now()
	if c, ok := podClock(env); ok {
		now = c.Now()
	}
	i := e.recordJob(now, kinds)
	if slices.Contains(args, "--seed=false") {
		return args, i, nil
	}
	b := BusinessRows(now, perKind, kinds)
	if e.Scenario != nil {
		e.Scenario.Business.Apply(&b, now, perKind, kinds)
	}
	if err := e.SeedBusiness(ctx, b); err != nil {
		return nil, i, err
	}
	// The run starts once its rows are in: it owes what they call for,
	// and nothing a later run seeds.
	e.audit.mu.Lock()
	e.audit.rec.Jobs[i].At = time.Since(e.TL.Start())
	e.audit.mu.Unlock()
	return append(args, "--seed=false"), i, nil
}

// jobFlags reads an enqueue command's --per-kind and --kinds (the last of
// each wins, as the flag package reads them; "all" is every kind).
func jobFlags(args []string) (perKind int, kinds []string) {
	perKind = 3 // the enqueue command's default
	for i := 0; i+1 < len(args); i++ {
		switch args[i] {
		case "--per-kind":
			if n, err := strconv.Atoi(args[i+1]); err == nil {
				perKind = n
			}
		case "--kinds":
			kinds = nil
			if args[i+1] != "all" {
				kinds = strings.Split(args[i+1], ",")
			}
		}
	}
	return perKind, kinds
}

// clockEnv is the variable a pod's clock setting is given in (the
// run's, or a clock fault's).
const clockEnv = "OUTBOXCHAOS_CLOCK"

// podClock is the clock a pod's own environment sets (a clock fault),
// if it sets one.
func podClock(env []string) (clock.Clock, bool) {
	for _, kv := range slices.Backward(env) {
		if v, ok := strings.CutPrefix(kv, clockEnv+"="); ok {
			if c, err := clock.Parse(v); err == nil {
				return c, true
			}
		}
	}
	return nil, false
}

// noteSkew records pod as running on a clock of its own when its
// environment sets one.
func (e *Env) noteSkew(pod string, env []string) {
	if _, ok := podClock(env); !ok {
		return
	}
	e.audit.mu.Lock()
	defer e.audit.mu.Unlock()
	if !slices.Contains(e.audit.rec.Skewed, pod) {
		e.audit.rec.Skewed = append(e.audit.rec.Skewed, pod)
	}
}

// harnessRecord is the run's harness record with the consent the fault
// engine withdrew, or nil when the harness seeded no business row (the
// run's rows are then someone else's, and the auditor cannot judge it).
func (e *Env) harnessRecord(eng *faults.Engine) *auditor.Record {
	now := e.Now()
	e.audit.mu.Lock()
	defer e.audit.mu.Unlock()
	if !e.audit.seeded {
		return nil
	}
	rec := e.audit.rec
	// A job still running (none is once the pods are stopped) may take
	// its day until now, as far as this record can tell.
	rec.Jobs = slices.Clone(rec.Jobs)
	for i := range rec.Jobs {
		if rec.Jobs[i].End.IsZero() {
			rec.Jobs[i].End = now
		}
	}
	rec.Withdrawals = nil
	if eng != nil {
		for _, f := range eng.Faults() {
			if w, ok := f.(*faults.WithdrawConsent); ok {
				if at, done := w.Done(); done {
					rec.Withdrawals = append(rec.Withdrawals, auditor.Withdrawal{At: at.Sub(e.TL.Start()), Time: e.clockAt(at), Member: w.Member})
				}
			}
		}
	}
	return &rec
}

// clockAt is the run's clock at wall time t, read back from now (the
// run's clock runs at the wall's rate between jumps; a withdrawal's time
// of day is for people, the invariants compare offsets).
func (e *Env) clockAt(t time.Time) time.Time { return e.Now().Add(-time.Since(t)) }

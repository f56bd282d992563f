package reconcile_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/outboxchaos/outboxchaos/history"
	"github.com/outboxchaos/outboxchaos/system/clock"
	"github.com/outboxchaos/outboxchaos/system/config"
	"github.com/outboxchaos/outboxchaos/system/inbox"
	"github.com/outboxchaos/outboxchaos/system/reconcile"
	"github.com/outboxchaos/outboxchaos/system/sms"
	"github.com/outboxchaos/outboxchaos/system/testenv"
)

// scripted is a vendor whose report answers come from a script, one per
// lookup, then the last one forever; sends answer send.
type scripted struct {
	mu      sync.Mutex
	answers []answer
	lookups int
	sends   []sms.Request
	send    sms.Result
}

type answer struct {
	rep sms.Report
	err error
}

var (
	sent    = answer{rep: sms.Report{Found: true, Status: "SENT", Count: 1}}
	missing = answer{rep: sms.Report{}}
	failed  = answer{rep: sms.Report{Found: true, Status: "FAILED", Reason: "3101 undeliverable"}}
	pending = answer{rep: sms.Report{Found: true, Status: "PENDING"}}
	broken  = answer{err: errors.New("vendor lookup: HTTP 503")}
)

func (s *scripted) Lookup(_ context.Context, refkey string) (sms.Report, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.answers[min(s.lookups, len(s.answers)-1)]
	s.lookups++
	a.rep.RefKey = refkey
	return a.rep, a.err
}

func (s *scripted) Send(_ context.Context, req sms.Request) sms.Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sends = append(s.sends, req)
	return s.send
}

// fixture is one ERROR row claimed at claimedAt, a reconciler on a
// stopped virtual clock, and its alerts.
type fixture struct {
	db     *testenv.DB
	clk    *clock.Virtual
	cfg    config.Config
	vendor *scripted
	alerts *testenv.AlertRecorder
	rec    *reconcile.Reconciler
}

const mid = "notification-outbox-1"

func newFixture(t *testing.T, v *scripted, tune func(*config.Config)) *fixture {
	t.Helper()
	db := testenv.NewMigratedSchema(t)
	f := &fixture{db: db, clk: clock.NewVirtual(clock.At(time.Now(), 10, 0), 0), vendor: v, alerts: &testenv.AlertRecorder{}}
	c := config.Default()
	c.PGURL, c.Prefix, c.Instance = db.URL, db.Schema, "reconciler-1"
	c.VendorAcceptWindow, c.ReportFinalAfter, c.ClockMargin = time.Minute, time.Minute, time.Second
	c.ReconcileRetry, c.ReconcileMaxTries = time.Minute, 4
	if tune != nil {
		tune(&c)
	}
	f.cfg = c
	f.rec = reconcile.New(c, db.Pool, f.clk, v, f.alerts, slog.New(slog.DiscardHandler))
	ctx := context.Background()
	won, err := inbox.TryClaim(ctx, db.Pool, inbox.Claim{MessageID: mid, OutboxID: 1, DedupKey: "GRADE_RENEWAL:1",
		Kind: "GRADE_RENEWAL", Phone: "01000000001"}, f.clk.Now())
	if err != nil || !won {
		t.Fatalf("claim: %v %v", won, err)
	}
	if _, err := inbox.Finish(ctx, db.Pool, mid, history.InboxError, "TIMEOUT", "vendor timeout", f.clk.Now()); err != nil {
		t.Fatal(err)
	}
	return f
}

// runAt moves the clock by d and runs the reconciler once.
func (f *fixture) runAt(t *testing.T, d time.Duration) reconcile.Stats {
	t.Helper()
	f.clk.Set(f.clk.Now().Add(d))
	st, err := f.rec.RunOnce(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func (f *fixture) row(t *testing.T) inbox.Row {
	t.Helper()
	rows, err := inbox.All(context.Background(), f.db.Pool)
	if err != nil || len(rows) != 1 {
		t.Fatalf("rows %v %v", rows, err)
	}
	return rows[0]
}

// A row is not looked up before its claim is older than the acceptance
// window, the report's finality and the clock margin; then it settles only
// on the second agreeing answer, alerting first.
func TestSettlesSentOnTwoAgreeingAnswersAfterTheDeadline(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &scripted{answers: []answer{sent}}, nil)
	if st := f.runAt(t, reconcile.FinalAfter(f.cfg)-time.Millisecond); st.Looked != 0 || f.vendor.lookups != 0 {
		t.Fatalf("looked up before the deadline: %+v", st)
	}
	if st := f.runAt(t, time.Millisecond); st.Looked != 1 || st.Again != 1 {
		t.Fatalf("first lookup: %+v", st)
	}
	if r := f.row(t); r.Status != history.InboxError || r.ReconcileTries != 1 {
		t.Fatalf("settled on one answer: %+v", r)
	}
	if st := f.runAt(t, f.cfg.ReconcileRetry-time.Millisecond); st.Looked != 0 {
		t.Fatalf("looked again before reconcile-retry: %+v", st)
	}
	if st := f.runAt(t, time.Millisecond); st.Sent != 1 {
		t.Fatalf("second lookup: %+v", st)
	}
	if r := f.row(t); r.Status != history.InboxSent || r.Settled != history.SettledSent {
		t.Fatalf("row %+v", r)
	}
	if a := f.alerts.OfKind(history.AlertReconciledSent); len(a) != 1 || a[0].MessageID != mid {
		t.Fatalf("alerts %+v", f.alerts.All())
	}
	if st := f.runAt(t, time.Hour); st.Looked != 0 {
		t.Fatalf("a settled row was looked up again: %+v", st)
	}
}

// Answers that disagree never settle: a failure, then not found, then the
// truth twice settles SENT.
func TestDisagreeingAnswersDoNotSettle(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &scripted{answers: []answer{failed, missing, sent}}, func(c *config.Config) { c.ReconcileMaxTries = 6 })
	f.runAt(t, reconcile.FinalAfter(f.cfg))
	for i := 0; i < 3; i++ {
		f.runAt(t, f.cfg.ReconcileRetry)
	}
	if r := f.row(t); r.Status != history.InboxSent || r.Settled != history.SettledSent || r.ReconcileTries != 4 {
		t.Fatalf("row %+v", r)
	}
	if n := len(f.alerts.OfKind(history.AlertReconciledFailed)); n != 0 {
		t.Fatalf("%d RECONCILED_FAILED alerts", n)
	}
}

// Never received, twice, without re-sends: FAILED NEVER_RECEIVED with an
// alert; a definite failure keeps the vendor's reason.
func TestSettlesFailed(t *testing.T) {
	t.Parallel()
	for name, a := range map[string]answer{"never received": missing, "definite failure": failed} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, &scripted{answers: []answer{a}}, nil)
			f.runAt(t, reconcile.FinalAfter(f.cfg))
			f.runAt(t, f.cfg.ReconcileRetry)
			r := f.row(t)
			if r.Status != history.InboxFailed || r.Settled != history.SettledFailed || r.Error == nil {
				t.Fatalf("row %+v", r)
			}
			want := reconcile.NeverReceived
			if a.rep.Found {
				want = "3101 undeliverable"
			}
			if *r.Error != want || len(f.alerts.OfKind(history.AlertReconciledFailed)) != 1 || len(f.vendor.sends) != 0 {
				t.Fatalf("error %q, alerts %+v, sends %d", *r.Error, f.alerts.All(), len(f.vendor.sends))
			}
		})
	}
}

// Failed and pending lookups leave the row as it was; the last allowed try
// alerts RECONCILE_STUCK once and the row is never looked up again.
func TestGivesUpAfterBoundedTries(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &scripted{answers: []answer{broken, pending}}, nil)
	f.runAt(t, reconcile.FinalAfter(f.cfg))
	for i := 1; i < f.cfg.ReconcileMaxTries; i++ {
		f.runAt(t, f.cfg.ReconcileRetry)
	}
	if r := f.row(t); r.Status != history.InboxError || r.Settled != "" || r.ReconcileTries != f.cfg.ReconcileMaxTries {
		t.Fatalf("row %+v", r)
	}
	if n := len(f.alerts.OfKind(history.AlertReconcileStuck)); n != 1 {
		t.Fatalf("%d RECONCILE_STUCK alerts, want 1", n)
	}
	if st := f.runAt(t, time.Hour); st.Looked != 0 || f.vendor.lookups != f.cfg.ReconcileMaxTries {
		t.Fatalf("looked up after giving up: %+v, %d lookups", st, f.vendor.lookups)
	}
}

// With re-sends on, a message never received is re-sent once, with an
// expireat one acceptance window after the re-send's claim; accepted, it
// is SENT (RESENT) with its alert.
func TestResendsWhatNeverArrived(t *testing.T) {
	t.Parallel()
	v := &scripted{answers: []answer{missing}, send: sms.Result{Outcome: sms.Sent, Code: sms.CodeSuccess}}
	f := newFixture(t, v, func(c *config.Config) { c.ReconcileResend = true })
	seedOutbox(t, f.db)
	f.runAt(t, reconcile.FinalAfter(f.cfg))
	st := f.runAt(t, f.cfg.ReconcileRetry)
	if st.Resent != 1 || len(v.sends) != 1 {
		t.Fatalf("stats %+v, sends %d", st, len(v.sends))
	}
	req := v.sends[0]
	if req.RefKey != mid || !req.ExpireAt.Equal(f.clk.Now().Add(f.cfg.VendorAcceptWindow)) || req.Text == "" {
		t.Fatalf("re-send %+v", req)
	}
	if r := f.row(t); r.Status != history.InboxSent || r.Settled != history.SettledResent || r.Resends != 1 {
		t.Fatalf("row %+v", r)
	}
	if len(f.alerts.OfKind(history.AlertResent)) != 1 {
		t.Fatalf("alerts %+v", f.alerts.All())
	}
}

// A re-send whose outcome is unknown goes back to ERROR and is looked up
// from its new claim; the re-send budget then settles it FAILED rather
// than sending a third time.
func TestUnknownResendIsReconciledAgain(t *testing.T) {
	t.Parallel()
	v := &scripted{answers: []answer{missing}, send: sms.Result{Outcome: sms.Unknown, Code: sms.CodeTimeout, Err: errors.New("timeout")}}
	f := newFixture(t, v, func(c *config.Config) { c.ReconcileResend = true })
	seedOutbox(t, f.db)
	f.runAt(t, reconcile.FinalAfter(f.cfg))
	f.runAt(t, f.cfg.ReconcileRetry)
	if r := f.row(t); r.Status != history.InboxError || r.Resends != 1 || r.ReconcileTries != 0 {
		t.Fatalf("after the unknown re-send: %+v", r)
	}
	if st := f.runAt(t, f.cfg.ReconcileRetry); st.Looked != 0 {
		t.Fatalf("looked up before the re-send's own deadline: %+v", st)
	}
	f.runAt(t, reconcile.FinalAfter(f.cfg))
	f.runAt(t, f.cfg.ReconcileRetry)
	if r := f.row(t); r.Status != history.InboxFailed || r.Settled != history.SettledFailed || len(v.sends) != 1 {
		t.Fatalf("row %+v after %d sends", r, len(v.sends))
	}
}

// A write from a reconciler that read the row before another one moved it
// on changes nothing.
func TestStaleReconcilerWritesNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &scripted{answers: []answer{missing}}, nil)
	ctx := context.Background()
	due, err := inbox.Due(ctx, f.db.Pool, f.clk.Now(), f.clk.Now(), 10, 10)
	if err != nil || len(due) != 1 {
		t.Fatalf("due %v %v", due, err)
	}
	stale := due[0]
	if ok, err := inbox.NoteLookup(ctx, f.db.Pool, stale, reconcile.AnswerMissing, f.clk.Now(), f.clk.Now()); err != nil || !ok {
		t.Fatalf("first note: %v %v", ok, err)
	}
	for name, write := range map[string]func() (bool, error){
		"note": func() (bool, error) { return inbox.NoteLookup(ctx, f.db.Pool, stale, "SENT", f.clk.Now(), f.clk.Now()) },
		"settle": func() (bool, error) {
			return inbox.Settle(ctx, f.db.Pool, stale, history.InboxSent, history.SettledSent, "", f.clk.Now())
		},
		"resend": func() (bool, error) { return inbox.ClaimResend(ctx, f.db.Pool, stale, f.clk.Now()) },
	} {
		if ok, err := write(); err != nil || ok {
			t.Errorf("stale %s wrote a row: %v %v", name, ok, err)
		}
	}
	if r := f.row(t); r.Status != history.InboxError || r.ReconcileTries != 1 {
		t.Fatalf("row %+v", r)
	}
}

// seedOutbox writes the outbox row (its payload as a job stores it: no
// outbox id or dedup key, which the relay adds) and the member a re-send
// reads.
func seedOutbox(t *testing.T, db *testenv.DB) {
	t.Helper()
	ctx := context.Background()
	for _, q := range []string{
		`INSERT INTO members (id, name, phone, sms_consent, active) VALUES (1, 'Kim', '01000000001', true, true)`,
		`INSERT INTO registered_numbers (phone) VALUES ('01000000001')`,
		`INSERT INTO notification_outbox (id, dedup_key, kind, payload, scheduled_date, next_attempt_at, created_at, updated_at)
		 VALUES (1, 'GRADE_RENEWAL:1', 'GRADE_RENEWAL',
		 '{"kind":"GRADE_RENEWAL","member_id":1,"phone":"01000000001","template":"","variables":{"name":"Kim","grade":"GOLD"},"advertising":false,"scheduled_date":"2026-12-01"}',
		 '2026-12-01', now(), now(), now())`,
	} {
		if _, err := db.Pool.Exec(ctx, q); err != nil {
			t.Fatalf("seed %q: %v", q, err)
		}
	}
}

// Package reconcile owns the settlement of unknown vendor outcomes (the
// design's stated next step): an ERROR inbox row — a vendor timeout or 5xx,
// a worker killed after its claim, a result that could not be written — is
// looked up in the vendor's delivery report by refkey and settled:
//
//	ERROR ─report SENT (twice)────────────────▶ SENT   (RECONCILED_SENT)
//	      ─report FAILED (twice)──────────────▶ FAILED (RECONCILED_FAILED, the vendor's reason)
//	      ─never received (twice)─────────────▶ FAILED (RECONCILED_FAILED, NEVER_RECEIVED)
//	      ─never received (twice), --resend──▶ RESENDING ─accepted─▶ SENT (RESENT)
//	                                                     └otherwise─▶ ERROR (looked up again)
//	      ─lookup failed / pending──▶ ERROR, looked up again; after the last try RECONCILE_STUCK
//
// Why this can never send twice (docs/reconcile.md has the argument in
// full): every send carries expireat = claim time + VendorAcceptWindow, and
// the vendor drops a request it reaches later; its report of a request is
// final ReportFinalAfter after that. A row is looked up only once its claim
// is older than the window plus the finality plus ClockMargin, so the
// original request can no longer land, and it is settled only on two
// agreeing answers ReconcileRetry apart. Every write is conditional on the
// row being as read; every settlement alerts before it is written. One
// reconciler runs at a time (a scheduler lock, as cleanup), and one that
// lost the lock while paused writes 0 rows.
package reconcile

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxchaos/outboxchaos/history"
	"github.com/outboxchaos/outboxchaos/system/alert"
	"github.com/outboxchaos/outboxchaos/system/canary"
	"github.com/outboxchaos/outboxchaos/system/cleanup"
	"github.com/outboxchaos/outboxchaos/system/clock"
	"github.com/outboxchaos/outboxchaos/system/config"
	"github.com/outboxchaos/outboxchaos/system/inbox"
	"github.com/outboxchaos/outboxchaos/system/killpoint"
	"github.com/outboxchaos/outboxchaos/system/periodic"
	"github.com/outboxchaos/outboxchaos/system/sms"
)

// LockName is the scheduler lock row of the reconciler.
const LockName = "notification-reconcile"

// Answers: what one lookup said, as stored in reconcile_last.
const (
	AnswerSent    = "SENT"
	AnswerMissing = "MISSING" // the vendor never received it
	AnswerPending = "PENDING" // the report is not ready
	AnswerFailed  = "FAILED:" // + the vendor's reason
	AnswerError   = "LOOKUP_FAILED"
	// NeverReceived is the reason of a row settled FAILED because the
	// vendor never received it.
	NeverReceived = "NEVER_RECEIVED"
)

// Vendor is the part of the SMS client the reconciler uses.
type Vendor interface {
	Lookup(ctx context.Context, refkey string) (sms.Report, error)
	Send(ctx context.Context, req sms.Request) sms.Result
}

// Stats counts one run.
type Stats struct {
	Looked, Sent, Failed, Resent, Again, Stuck int
}

// Reconciler settles ERROR rows.
type Reconciler struct {
	cfg    config.Config
	pool   *pgxpool.Pool
	clock  clock.Clock
	vendor Vendor
	alerts alert.Sender
	log    *slog.Logger
	// firstAnswer settles on the first lookup, as soon as a row is ERROR
	// (the TrustFirstAnswer canary); normally false.
	firstAnswer bool

	loop periodic.Loop
}

// New returns a reconciler; the TrustFirstAnswer canary, if armed, makes it
// settle on the first answer without waiting for the deadline.
func New(cfg config.Config, pool *pgxpool.Pool, clk clock.Clock, v Vendor, alerts alert.Sender, log *slog.Logger) *Reconciler {
	return &Reconciler{cfg: cfg, pool: pool, clock: clk, vendor: v, alerts: alerts, log: log.With("component", "reconcile"),
		firstAnswer: canary.On(canary.TrustFirstAnswer)}
}

// FinalAfter is how long after a claim the vendor's report of its request
// is final: the acceptance window, the report's finality and the clock
// margin.
func FinalAfter(cfg config.Config) time.Duration {
	return cfg.VendorAcceptWindow + cfg.ReportFinalAfter + cfg.ClockMargin
}

// RunOnce looks up every due row once if it gets the lock.
func (r *Reconciler) RunOnce(ctx context.Context) (Stats, error) {
	var st Stats
	now := r.clock.Now()
	ok, err := cleanup.TryLock(ctx, r.pool, LockName, r.cfg.Instance, now, r.cfg.ReconcileLockTTL)
	if err != nil || !ok {
		return st, err
	}
	defer func() {
		if err := cleanup.Unlock(context.WithoutCancel(ctx), r.pool, LockName, r.cfg.Instance, r.clock.Now()); err != nil {
			r.log.Error("release reconcile lock", "err", err)
		}
	}()
	claimedBy := now.Add(-FinalAfter(r.cfg))
	if r.firstAnswer {
		claimedBy = now
	}
	rows, err := inbox.Due(ctx, r.pool, now, claimedBy, r.cfg.ReconcileMaxTries, r.cfg.ReconcileBatch)
	if err != nil {
		return st, err
	}
	for _, u := range rows {
		if ctx.Err() != nil {
			break
		}
		st.Looked++
		r.one(ctx, u, &st)
	}
	return st, nil
}

// one looks u up and settles it or notes the answer.
func (r *Reconciler) one(ctx context.Context, u inbox.Unsettled, st *Stats) {
	answer, reason := r.lookup(ctx, u.MessageID)
	killpoint.Hit(killpoint.ReconcileAfterLookup)
	now := r.clock.Now()
	settles := answer != AnswerError && answer != AnswerPending && (answer == u.Last || r.firstAnswer)
	if !settles {
		st.Again++
		r.again(ctx, u, answer, now, st)
		return
	}
	switch {
	case answer == AnswerSent:
		if r.settle(ctx, u, history.InboxSent, history.SettledSent, history.AlertReconciledSent, "", now) {
			st.Sent++
		}
	case strings.HasPrefix(answer, AnswerFailed):
		if r.settle(ctx, u, history.InboxFailed, history.SettledFailed, history.AlertReconciledFailed, reason, now) {
			st.Failed++
		}
	case r.cfg.ReconcileResend && u.Resends < r.cfg.ReconcileMaxResends:
		if r.resend(ctx, u) {
			st.Resent++
		}
	default:
		if r.settle(ctx, u, history.InboxFailed, history.SettledFailed, history.AlertReconciledFailed, NeverReceived, now) {
			st.Failed++
		}
	}
}

// lookup asks the vendor's report and classifies the answer.
func (r *Reconciler) lookup(ctx context.Context, mid string) (answer, reason string) {
	rep, err := r.vendor.Lookup(ctx, mid)
	switch {
	case err != nil:
		answer, reason = AnswerError, err.Error()
	case !rep.Found:
		answer = AnswerMissing
	case rep.Status == "SENT":
		answer = AnswerSent
	case rep.Status == "FAILED":
		reason = rep.Reason
		if reason == "" {
			reason = "VENDOR_FAILED"
		}
		answer = AnswerFailed + reason
	default:
		answer = AnswerPending
	}
	r.log.Info("vendor report", history.KeyEvent, history.Lookup, history.KeyMessageID, mid, "answer", answer, history.KeyReason, reason)
	return answer, reason
}

// again notes an answer that did not settle u; the last allowed try
// alerts first, and leaves the row to an operator.
func (r *Reconciler) again(ctx context.Context, u inbox.Unsettled, answer string, now time.Time, st *Stats) {
	if u.Tries+1 >= r.cfg.ReconcileMaxTries {
		st.Stuck++
		r.alerts.Send(ctx, alert.Alert{Kind: history.AlertReconcileStuck, OutboxID: u.OutboxID, MessageID: u.MessageID,
			DedupKey: u.DedupKey, Reason: fmt.Sprintf("no settling answer after %d lookups (last: %s)", u.Tries+1, answer),
			Instance: r.cfg.Instance, At: now})
	}
	if _, err := inbox.NoteLookup(ctx, r.pool, u, answer, now.Add(r.cfg.ReconcileRetry), now); err != nil {
		r.log.Error("note lookup failed", history.KeyEvent, history.ReconcileFailed, history.KeyMessageID, u.MessageID, history.KeyErr, err)
	}
}

// settle writes a final status after its alert (a crash in between alerts
// twice, never zero times). It reports whether the row was settled.
func (r *Reconciler) settle(ctx context.Context, u inbox.Unsettled, status, how, kind, reason string, now time.Time) bool {
	r.alerts.Send(ctx, alert.Alert{Kind: kind, OutboxID: u.OutboxID, MessageID: u.MessageID, DedupKey: u.DedupKey,
		Reason: reason, Instance: r.cfg.Instance, At: now})
	killpoint.Hit(killpoint.ReconcileBeforeSettle)
	ok, err := inbox.Settle(ctx, r.pool, u, status, how, reason, now)
	switch {
	case err != nil:
		r.log.Error("settle failed", history.KeyEvent, history.ReconcileFailed, history.KeyMessageID, u.MessageID, history.KeyErr, err)
	case !ok:
		r.log.Warn("row moved on before its settlement", history.KeyEvent, history.SettleLost, history.KeyMessageID, u.MessageID)
	default:
		r.log.Info("settled", history.KeyEvent, history.Settle, history.KeyMessageID, u.MessageID, history.KeyStatus, status, "how", how, history.KeyReason, reason)
	}
	return err == nil && ok
}

// Start runs RunOnce every ReconcileInterval until Stop.
func (r *Reconciler) Start(ctx context.Context) error {
	err := r.loop.Start(ctx, r.cfg.ReconcileInterval, func(ctx context.Context) {
		st, err := r.RunOnce(ctx)
		if err != nil && ctx.Err() == nil {
			r.log.Error("reconcile run failed", history.KeyEvent, history.RunFailed, history.KeyErr, err)
		} else if st.Looked > 0 {
			r.log.Info("reconcile run", history.KeyEvent, history.ReconcileRun, "looked", st.Looked, "sent", st.Sent,
				"failed", st.Failed, "resent", st.Resent, "again", st.Again, "stuck", st.Stuck)
		}
	})
	if err != nil {
		return fmt.Errorf("start reconciler: %w", err)
	}
	return nil
}

// Stop ends the loop. Safe to call twice or before Start.
func (r *Reconciler) Stop() { r.loop.Stop() }

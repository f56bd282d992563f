package reconcile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/outboxchaos/outboxchaos/history"
	"github.com/outboxchaos/outboxchaos/system/alert"
	"github.com/outboxchaos/outboxchaos/system/inbox"
	"github.com/outboxchaos/outboxchaos/system/killpoint"
	"github.com/outboxchaos/outboxchaos/system/notification"
	"github.com/outboxchaos/outboxchaos/system/precheck"
	"github.com/outboxchaos/outboxchaos/system/sms"
)

// resend sends u again: the vendor's final report said twice that it never
// received it, so the original request can no longer land (its expireat
// passed before the first of those lookups). The worker's pre-checks run
// again first (hours and consent may have changed); a message they block
// is settled FAILED with their reason. The claim (ERROR → RESENDING), the
// call and the result run detached from cancellation, as the worker's
// steps 3–5 do. It reports whether the vendor accepted the re-send.
func (r *Reconciler) resend(ctx context.Context, u inbox.Unsettled) bool {
	now := r.clock.Now()
	body, err := r.message(ctx, u)
	if errors.Is(err, pgx.ErrNoRows) {
		r.settle(ctx, u, history.InboxFailed, history.SettledFailed, history.AlertReconciledFailed, NeverReceived+": no outbox row to re-send", now)
		return false
	}
	if err != nil {
		r.log.Error("load payload for re-send", history.KeyEvent, history.ReconcileFailed, history.KeyMessageID, u.MessageID, history.KeyErr, err)
		return false
	}
	v, err := precheck.Check(ctx, r.pool, &r.cfg, now, u.MessageID, body)
	if err != nil {
		r.log.Error("pre-check before re-send", history.KeyEvent, history.ReconcileFailed, history.KeyMessageID, u.MessageID, history.KeyErr, err)
		return false
	}
	if v.Reason != "" {
		r.settle(ctx, u, history.InboxFailed, history.SettledFailed, history.AlertReconciledFailed, NeverReceived+"; not re-sent: "+v.Reason, now)
		return false
	}
	ctx = context.WithoutCancel(ctx)
	ok, err := inbox.ClaimResend(ctx, r.pool, u, now)
	if err != nil || !ok {
		if err != nil {
			r.log.Error("claim re-send", history.KeyEvent, history.ReconcileFailed, history.KeyMessageID, u.MessageID, history.KeyErr, err)
		}
		return false
	}
	r.log.Info("re-send claimed", history.KeyEvent, history.ResendClaim, history.KeyMessageID, u.MessageID, "resend", u.Resends+1)
	killpoint.Hit(killpoint.ReconcileAfterResendClaim)
	res := r.vendor.Send(ctx, sms.Request{RefKey: u.MessageID, Phone: v.Payload.Phone, From: r.cfg.SenderNumber,
		TemplateCode: v.Rendered.TemplateCode, Text: v.Rendered.Text, Fallback: v.Rendered.Fallback,
		ExpireAt: r.cfg.SendDeadline(now, v.Payload.Advertising)})
	r.log.Info("vendor call", history.KeyEvent, history.VendorCall, history.KeyMessageID, u.MessageID, history.KeyOutcome, res.Outcome.String(),
		"code", res.Code, "resend", u.Resends+1)
	killpoint.Hit(killpoint.ReconcileAfterResend)
	at := r.clock.Now()
	status, errText := history.InboxSent, ""
	switch res.Outcome {
	case sms.Sent:
		r.alerts.Send(ctx, alert.Alert{Kind: history.AlertResent, OutboxID: u.OutboxID, MessageID: u.MessageID,
			DedupKey: u.DedupKey, Reason: "never received; re-sent", Instance: r.cfg.Instance, At: at})
	case sms.Unknown:
		status, errText = history.InboxError, fmt.Sprintf("re-send outcome unknown: %v", res.Err)
		r.alerts.Send(ctx, alert.Alert{Kind: history.AlertVendorUnknown, OutboxID: u.OutboxID, MessageID: u.MessageID,
			DedupKey: u.DedupKey, Reason: "re-send: " + res.Code, Instance: r.cfg.Instance, At: at})
	default:
		status, errText = history.InboxError, fmt.Sprintf("re-send not sent: %v", res.Err)
	}
	written, err := inbox.FinishResend(ctx, r.pool, u.MessageID, status, res.Code, errText, at)
	switch {
	case err != nil:
		// The row stays RESENDING; cleanup turns it into ERROR (with its
		// alert) and the next lookups settle it.
		r.log.Error("re-send result write failed", history.KeyEvent, history.ResultFailed, history.KeyMessageID, u.MessageID, history.KeyErr, err)
	case !written:
		r.log.Warn("re-send result not written: row no longer RESENDING", history.KeyEvent, history.ResultLate, history.KeyMessageID, u.MessageID)
	default:
		r.log.Info("re-send result written", history.KeyEvent, history.Result, history.KeyMessageID, u.MessageID, history.KeyStatus, status)
	}
	return res.Outcome == sms.Sent
}

// message rebuilds the body the relay published for u: the outbox row's
// payload with its outbox id and dedup key set (the reconciler reads the
// outbox, never writes it).
func (r *Reconciler) message(ctx context.Context, u inbox.Unsettled) ([]byte, error) {
	var raw []byte
	var key string
	err := r.pool.QueryRow(ctx, `SELECT payload, dedup_key FROM notification_outbox WHERE id = $1`, u.OutboxID).Scan(&raw, &key)
	if err != nil {
		return nil, err
	}
	var p notification.Payload
	if err := json.Unmarshal(raw, &p); err != nil {
		return raw, nil // the pre-check names it MALFORMED_PAYLOAD
	}
	p.OutboxID, p.DedupKey = u.OutboxID, key
	return json.Marshal(p)
}

// Package precheck owns step 2 of the worker (design §5): the checks a message
// passes before anyone may claim it and call the vendor — a message_id of
// the right form, a payload that decodes and renders (template, fallback
// within 2,000 EUC-KR bytes), advertising hours, the member's SMS consent
// and, outside production, a registered number. The worker runs them on
// every delivery; the reconciler runs them again before a re-send, since
// hours or consent may have changed since the first attempt.
package precheck

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/outboxchaos/outboxchaos/system/config"
	"github.com/outboxchaos/outboxchaos/system/notification"
)

// DB is a pool, connection or transaction.
type DB interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Verdict is the outcome of the checks for one message. Reason is empty when
// the message may be sent; otherwise Skip says whether it is skipped on
// purpose (ack, no history row) or blocked for good (parked).
type Verdict struct {
	Payload  notification.Payload
	Rendered notification.Rendered
	Reason   string
	Skip     bool
}

// Check runs the pre-checks for message mid with payload body at now. An
// error is an infrastructure failure (the caller retries later), never a
// verdict.
func Check(ctx context.Context, db DB, cfg *config.Config, now time.Time, mid string, body []byte) (Verdict, error) {
	return Run(ctx, db, cfg, now, mid, body, Options{})
}

// Options leave out a check (only a canary does: the worker's
// ConsentAtRelayOnly) or hand over an answer the caller read already.
type Options struct {
	SkipConsent bool // no consent re-check
	// Consent is the member's consent as the caller read it with
	// ConsentSQL in a statement of its own (the worker reads it with its
	// peek, in one round trip); nil: Run reads it.
	Consent *bool
}

// ConsentSQL is the consent re-check ($1 the member's id): whether the
// member exists, is active and consents to SMS; no row, or NULL, is no.
const ConsentSQL = `SELECT sms_consent AND active FROM members WHERE id = $1`

// Run is Check with options.
func Run(ctx context.Context, db DB, cfg *config.Config, now time.Time, mid string, body []byte, o Options) (Verdict, error) {
	p, derr := notification.Decode(body)
	return RunDecoded(ctx, db, cfg, now, mid, p, derr, o)
}

// RunDecoded is Run on a body the caller decoded already (p, and derr,
// notification.Decode's error).
func RunDecoded(ctx context.Context, db DB, cfg *config.Config, now time.Time, mid string, p notification.Payload, derr error, o Options) (Verdict, error) {
	var v Verdict
	if mid == "" {
		v.Reason = "MISSING_MESSAGE_ID"
		return v, nil
	}
	v.Payload = p
	if derr != nil {
		v.Reason = "MALFORMED_PAYLOAD"
		return v, nil
	}
	if mid != notification.MessageID(p.OutboxID) && len([]rune(mid)) <= notification.MaxMessageIDLen {
		v.Reason = "MESSAGE_ID_MISMATCH"
		return v, nil
	}
	r, rerr := notification.Render(mid, p)
	v.Rendered = r
	if rerr != nil {
		v.Reason = notification.Reason(rerr)
		return v, nil
	}
	if p.Advertising {
		m := now.Hour()*60 + now.Minute()
		if m < cfg.AdSendFrom.Minutes() || m >= cfg.AdSendUntil.Minutes() {
			v.Reason = "OUTSIDE_AD_HOURS"
			return v, nil
		}
	}
	consent := true
	switch {
	case o.SkipConsent:
	case o.Consent != nil:
		consent = *o.Consent
	default:
		err := db.QueryRow(ctx, `SELECT coalesce((`+ConsentSQL+`), false)`, p.MemberID).Scan(&consent)
		if err != nil {
			return v, fmt.Errorf("re-check consent of member %d: %w", p.MemberID, err)
		}
	}
	if !consent {
		v.Reason, v.Skip = "NO_SMS_CONSENT", true
		return v, nil
	}
	ok, err := AllowedNumber(ctx, db, cfg.Production, p.Phone)
	if err != nil {
		return v, err
	}
	if !ok {
		v.Reason, v.Skip = "NON_PRODUCTION_NUMBER", true
	}
	return v, nil
}

// AllowedNumber is the non-production guard: outside production only
// registered numbers may receive a message.
func AllowedNumber(ctx context.Context, db DB, production bool, phone string) (bool, error) {
	if production {
		return true, nil
	}
	var ok bool
	if err := db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM registered_numbers WHERE phone = $1)`, phone).Scan(&ok); err != nil {
		return false, fmt.Errorf("check registered number: %w", err)
	}
	return ok, nil
}

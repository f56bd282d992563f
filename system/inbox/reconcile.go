package inbox

import (
	"context"
	"fmt"
	"time"

	"github.com/outboxchaos/outboxchaos/history"
)

// The reconciler's writes (system/reconcile). Each is conditional on the
// row still being what the reconciler read: status ERROR (or RESENDING for
// its own re-send), unsettled, and the same (resends, reconcile_tries)
// pair. Both counters only grow within a re-send generation and resends
// only grows, so a reconciler that was paused while another one moved the
// row on writes 0 rows instead of acting on an answer that is out of date.

// Unsettled is an ERROR row the reconciler may look up.
type Unsettled struct {
	MessageID string
	OutboxID  int64
	DedupKey  string
	ClaimedAt time.Time // created_at: the latest claim, first or re-send
	Tries     int       // lookups made since that claim
	Last      string    // the previous lookup's answer, "" if none
	Resends   int
}

// Due returns up to limit unsettled ERROR rows with fewer than maxTries
// lookups whose next lookup is due at now: never looked up and claimed at
// or before claimedBy, or looked up and due again.
func Due(ctx context.Context, db DB, now, claimedBy time.Time, maxTries, limit int) ([]Unsettled, error) {
	rows, err := db.Query(ctx, `SELECT message_id, coalesce(outbox_id, 0), coalesce(dedup_key, ''), created_at,
			reconcile_tries, coalesce(reconcile_last, ''), resends
		FROM notification_histories
		WHERE status = 'ERROR' AND settled IS NULL AND message_id IS NOT NULL AND reconcile_tries < $3
		  AND ((reconcile_next_at IS NULL AND created_at <= $2) OR reconcile_next_at <= $1)
		ORDER BY id LIMIT $4`, now, claimedBy, maxTries, limit)
	if err != nil {
		return nil, fmt.Errorf("list ERROR rows due for a lookup: %w", err)
	}
	defer rows.Close()
	var out []Unsettled
	for rows.Next() {
		var u Unsettled
		if err := rows.Scan(&u.MessageID, &u.OutboxID, &u.DedupKey, &u.ClaimedAt, &u.Tries, &u.Last, &u.Resends); err != nil {
			return nil, fmt.Errorf("scan ERROR row: %w", err)
		}
		out = append(out, u)
	}
	return out, rows.Err()
}

// NoteLookup records a lookup that did not settle u: its answer, and when
// to look again.
func NoteLookup(ctx context.Context, db DB, u Unsettled, answer string, next, now time.Time) (bool, error) {
	tag, err := db.Exec(ctx, `UPDATE notification_histories
		SET reconcile_tries = reconcile_tries + 1, reconcile_last = $4, reconcile_next_at = $5, updated_at = $6
		WHERE message_id = $1 AND status = 'ERROR' AND settled IS NULL AND resends = $2 AND reconcile_tries = $3`,
		u.MessageID, u.Resends, u.Tries, answer, next, now)
	if err != nil {
		return false, fmt.Errorf("note lookup of %s: %w", u.MessageID, err)
	}
	return tag.RowsAffected() == 1, nil
}

// Settle moves u from ERROR to status (SENT or FAILED), settled as how,
// with the reason in error when one is given.
func Settle(ctx context.Context, db DB, u Unsettled, status, how, reason string, now time.Time) (bool, error) {
	tag, err := db.Exec(ctx, `UPDATE notification_histories
		SET status = $4, settled = $5, error = coalesce($6, error), reconcile_tries = reconcile_tries + 1,
		    reconcile_next_at = NULL, settled_at = $7, updated_at = $7
		WHERE message_id = $1 AND status = 'ERROR' AND settled IS NULL AND resends = $2 AND reconcile_tries = $3`,
		u.MessageID, u.Resends, u.Tries, status, how, nullable(reason), now)
	if err != nil {
		return false, fmt.Errorf("settle %s as %s: %w", u.MessageID, status, err)
	}
	return tag.RowsAffected() == 1, nil
}

// ClaimResend moves u from ERROR to RESENDING: now is its new claim time
// (the re-send's expireat and the SENDING timeout count from it), resends
// grows by one and the lookups start again. Only the reconciler that
// moved it may call the vendor.
func ClaimResend(ctx context.Context, db DB, u Unsettled, now time.Time) (bool, error) {
	tag, err := db.Exec(ctx, `UPDATE notification_histories
		SET status = 'RESENDING', resends = resends + 1, created_at = $4, reconcile_tries = 0,
		    reconcile_last = NULL, reconcile_next_at = NULL, updated_at = $4
		WHERE message_id = $1 AND status = 'ERROR' AND settled IS NULL AND resends = $2 AND reconcile_tries = $3`,
		u.MessageID, u.Resends, u.Tries, now)
	if err != nil {
		return false, fmt.Errorf("claim re-send of %s: %w", u.MessageID, err)
	}
	return tag.RowsAffected() == 1, nil
}

// FinishResend writes a re-send's result: SENT settled as RESENT, or ERROR
// (unknown outcome, or not sent) to be looked up again. false means the row
// was no longer RESENDING (cleanup turned it into ERROR).
func FinishResend(ctx context.Context, db DB, messageID, status, code, errText string, now time.Time) (bool, error) {
	how := ""
	if status == history.InboxSent {
		how = history.SettledResent
	}
	tag, err := db.Exec(ctx, `UPDATE notification_histories
		SET status = $2, settled = $3, vendor_code = $4, error = $5,
		    settled_at = CASE WHEN $3::text IS NULL THEN NULL ELSE $6::timestamptz END, updated_at = $6
		WHERE message_id = $1 AND status = 'RESENDING'`,
		messageID, status, nullable(how), nullable(code), nullable(errText), now)
	if err != nil {
		return false, fmt.Errorf("write re-send result %s of %s: %w", status, messageID, err)
	}
	return tag.RowsAffected() == 1, nil
}

package relay

import "github.com/outboxchaos/outboxchaos/system/canary"

// The relay's SQL. Each canary variant is a complete statement written out
// next to the real one; statementsFor picks one set when the relay is
// built, and statements_test checks that each variant differs from the
// real statement only where its canary means it to.

// reclaimSQL hands rows whose lease passed back to PENDING ($1: now).
const reclaimSQL = `
		UPDATE notification_outbox
		   SET status = 'PENDING', claimed_by = NULL, claimed_until = NULL,
		       status_reason = 'CLAIM_EXPIRED', updated_at = $1
		 WHERE status = 'PUBLISHING' AND claimed_until < $1
		RETURNING id`

// ClaimSQL is the one-statement claim of design §3 (exported for benchmarks and
// EXPLAIN). The locking subquery sits in ARRAY(...) so it runs exactly once
// (an InitPlan): as "id IN (SELECT …)" the planner may pick a nested-loop
// semi-join that rescans it per outer row, and each rescan skips the rows
// this statement already updated and locks the next LIMIT rows, so one run
// claimed every due row instead of at most BatchSize.
const ClaimSQL = `
	UPDATE notification_outbox
	   SET status = 'PUBLISHING', claimed_by = $1, claimed_until = $2, updated_at = $3
	 WHERE id = ANY(ARRAY(SELECT id FROM notification_outbox
	               WHERE status = 'PENDING' AND next_attempt_at <= $3
	               ORDER BY next_attempt_at, id
	               LIMIT $4
	               FOR UPDATE SKIP LOCKED))
	   AND status = 'PENDING'
	RETURNING id, dedup_key, payload, advertising, scheduled_date, attempts`

// withLookups is a claim statement (ClaimSQL or a canary's variant) as the
// relay sends it: the same one committed statement, which also returns for
// each claimed row its member's id, that member's consent (NULL: no such
// member) and, outside production, its phone if registered (NULL: not
// registered), so the re-checks cost no round trip of their own. The member
// id is read from the payload only when it is an integer (anything else
// matches no member; decide fails such a payload as malformed anyway). The
// lookups are scalar subqueries, so each is one primary-key probe per row
// whatever the planner thinks of the tables' sizes. Last, whether the
// inbox already holds the row's message (a copy an earlier claim published
// reached the worker): one probe of the inbox's unique index, read, never
// written. The decisions stay in decide.go.
func withLookups(claim string, production bool) string {
	registered := "NULL::text"
	if !production {
		registered = "(SELECT phone FROM registered_numbers WHERE phone = c.payload->>'phone')"
	}
	return `
	WITH claimed AS (` + claim + `)
	SELECT c.id, c.dedup_key, c.payload, c.advertising, c.scheduled_date, c.attempts, p.member_id,
	       (SELECT sms_consent AND active FROM members WHERE id = p.member_id),
	       ` + registered + `,
	       EXISTS (SELECT 1 FROM notification_histories WHERE message_id = 'notification-outbox-' || c.id)
	  FROM claimed c,
	       LATERAL (SELECT CASE WHEN c.payload->>'member_id' ~ '^-?[0-9]{1,18}$'
	                            THEN (c.payload->>'member_id')::bigint END AS member_id) p`
}

// ClaimWithLookupsSQL is ClaimSQL as a production relay sends it (exported
// for EXPLAIN).
var ClaimWithLookupsSQL = withLookups(ClaimSQL, true)

// claimSQLNoSkipLocked is the NoSkipLocked canary: ClaimSQL without its row
// locks and without the status re-check, so overlapping runs claim the same
// rows.
const claimSQLNoSkipLocked = `
	UPDATE notification_outbox
	   SET status = 'PUBLISHING', claimed_by = $1, claimed_until = $2, updated_at = $3
	 WHERE id = ANY(ARRAY(SELECT id FROM notification_outbox
	               WHERE status = 'PENDING' AND next_attempt_at <= $3
	               ORDER BY next_attempt_at, id
	               LIMIT $4))
	RETURNING id, dedup_key, payload, advertising, scheduled_date, attempts`

// claimSQLRecentOnly is the RecentOnly canary (windowed polling): ClaimSQL
// restricted to rows created since $5, the start of the last relay
// interval, so a row that missed its run is never relayed.
const claimSQLRecentOnly = `
	UPDATE notification_outbox
	   SET status = 'PUBLISHING', claimed_by = $1, claimed_until = $2, updated_at = $3
	 WHERE id = ANY(ARRAY(SELECT id FROM notification_outbox
	               WHERE status = 'PENDING' AND next_attempt_at <= $3 AND created_at >= $5
	               ORDER BY next_attempt_at, id
	               LIMIT $4
	               FOR UPDATE SKIP LOCKED))
	   AND status = 'PENDING'
	RETURNING id, dedup_key, payload, advertising, scheduled_date, attempts`

// claimSQLNewestFirst is the NewestFirst canary: ClaimSQL taking the
// newest due rows first.
const claimSQLNewestFirst = `
	UPDATE notification_outbox
	   SET status = 'PUBLISHING', claimed_by = $1, claimed_until = $2, updated_at = $3
	 WHERE id = ANY(ARRAY(SELECT id FROM notification_outbox
	               WHERE status = 'PENDING' AND next_attempt_at <= $3
	               ORDER BY next_attempt_at DESC, id DESC
	               LIMIT $4
	               FOR UPDATE SKIP LOCKED))
	   AND status = 'PENDING'
	RETURNING id, dedup_key, payload, advertising, scheduled_date, attempts`

// Every write after the claim is conditional on status = 'PUBLISHING' AND
// claimed_by = $2 (this run), so a run that lost its lease writes 0 rows.
// The NoClaimedBy canary's variants ("…AnyClaimer") drop the claimed_by
// condition ($2 is still bound, and only checked for NULL).

// MarkSQL marks confirmed rows PUBLISHED ($1 ids, $2 instance, $3 now);
// exported, as ClaimSQL is, so the benchmarks run the relay's own statement.
const MarkSQL = `UPDATE notification_outbox
		SET status = 'PUBLISHED', published_at = $3, status_reason = NULL, updated_at = $3
		WHERE id = ANY($1) AND status = 'PUBLISHING' AND claimed_by = $2
		RETURNING id`

// markSQLAnyClaimer is MarkSQL for the NoClaimedBy canary.
const markSQLAnyClaimer = `UPDATE notification_outbox
		SET status = 'PUBLISHED', published_at = $3, status_reason = NULL, updated_at = $3
		WHERE id = ANY($1) AND status = 'PUBLISHING' AND $2::text IS NOT NULL
		RETURNING id`

// finishSQL moves a row to a final status ($1 id, $2 instance, $3 status,
// $4 reason, $5 now).
const finishSQL = `UPDATE notification_outbox SET status = $3, status_reason = $4, updated_at = $5 WHERE id = $1 AND status = 'PUBLISHING' AND claimed_by = $2`

// finishSQLAnyClaimer is finishSQL for the NoClaimedBy canary.
const finishSQLAnyClaimer = `UPDATE notification_outbox SET status = $3, status_reason = $4, updated_at = $5 WHERE id = $1 AND status = 'PUBLISHING' AND $2::text IS NOT NULL`

// deferSQL hands an ad back as PENDING until $3 ($1 id, $2 instance, $4
// now).
const deferSQL = `UPDATE notification_outbox
		SET status = 'PENDING', claimed_by = NULL, claimed_until = NULL, next_attempt_at = $3,
		    status_reason = 'AD_CUTOFF_DEFERRED', updated_at = $4 WHERE id = $1 AND status = 'PUBLISHING' AND claimed_by = $2`

// deferSQLAnyClaimer is deferSQL for the NoClaimedBy canary.
const deferSQLAnyClaimer = `UPDATE notification_outbox
		SET status = 'PENDING', claimed_by = NULL, claimed_until = NULL, next_attempt_at = $3,
		    status_reason = 'AD_CUTOFF_DEFERRED', updated_at = $4 WHERE id = $1 AND status = 'PUBLISHING' AND $2::text IS NOT NULL`

// failSQL releases a row whose publish failed, with backoff ($1 id, $2
// instance, $3 attempt, $4 next attempt, $5 error, $6 now).
const failSQL = `UPDATE notification_outbox
		SET status = 'PENDING', attempts = $3, next_attempt_at = $4, last_error = $5,
		    claimed_by = NULL, claimed_until = NULL, status_reason = 'PUBLISH_FAILED', updated_at = $6 WHERE id = $1 AND status = 'PUBLISHING' AND claimed_by = $2`

// failSQLAnyClaimer is failSQL for the NoClaimedBy canary.
const failSQLAnyClaimer = `UPDATE notification_outbox
		SET status = 'PENDING', attempts = $3, next_attempt_at = $4, last_error = $5,
		    claimed_by = NULL, claimed_until = NULL, status_reason = 'PUBLISH_FAILED', updated_at = $6 WHERE id = $1 AND status = 'PUBLISHING' AND $2::text IS NOT NULL`

// statements are the relay's SQL from the claim on.
type statements struct {
	claim string
	// claimWindow: claim takes $5, the start of the last relay interval
	// (the RecentOnly canary).
	claimWindow                 bool
	mark, finish, deferAd, fail string
}

// statementsFor returns the relay's statements with canary bug (a canary
// name, "" for none) armed.
func statementsFor(bug string) statements {
	s := statements{claim: ClaimSQL, mark: MarkSQL, finish: finishSQL, deferAd: deferSQL, fail: failSQL}
	switch bug {
	case canary.NoSkipLocked:
		s.claim = claimSQLNoSkipLocked
	case canary.RecentOnly:
		s.claim, s.claimWindow = claimSQLRecentOnly, true
	case canary.NewestFirst:
		s.claim = claimSQLNewestFirst
	case canary.NoClaimedBy:
		s.mark, s.finish, s.deferAd, s.fail = markSQLAnyClaimer, finishSQLAnyClaimer, deferSQLAnyClaimer, failSQLAnyClaimer
	}
	return s
}

package relay

import (
	"time"

	json "github.com/goccy/go-json"

	"github.com/outboxchaos/outboxchaos/history"
	"github.com/outboxchaos/outboxchaos/system/canary"
	"github.com/outboxchaos/outboxchaos/system/clock"
	"github.com/outboxchaos/outboxchaos/system/config"
	"github.com/outboxchaos/outboxchaos/system/notification"
)

// The relay's per-row decisions (design §3) are pure: they read a claimed
// row, the consent and number lookups and the clock's time passed in by the
// caller (never SQL now()), and touch neither the database nor the broker.

// rules are the decisions' settings, chosen in New.
type rules struct {
	cfg config.Config
	// expireTaken expires (without an alert), defers or skips a row whose
	// message the worker took already (the ExpireTaken canary).
	expireTaken bool
	expire      bool // expire rows past their scheduled date (the NoExpiry canary clears it)
	deferAds    bool // defer ads at or after the cut-off (the NoAdDeferral canary clears it)
	// flatBackoff waits the first backoff step after every failure (the
	// FlatBackoff canary).
	flatBackoff bool
}

// rulesFor returns the rules of cfg with canary bug (a canary name, "" for
// none) armed.
func rulesFor(cfg config.Config, bug string) rules {
	return rules{cfg: cfg, expire: bug != canary.NoExpiry, deferAds: bug != canary.NoAdDeferral, flatBackoff: bug == canary.FlatBackoff,
		expireTaken: bug == canary.ExpireTaken}
}

// verdict is what becomes of one claimed row.
type verdict int

const (
	publishRow verdict = iota // send it to the broker
	failRow                   // FAILED: the payload cannot be decoded (alerted)
	expireRow                 // EXPIRED: its scheduled date has passed (alerted)
	deferRow                  // an ad back to PENDING until the ads resume
	skipRow                   // SKIPPED: no consent, no member, or an unregistered number outside production
	takenRow                  // PUBLISHED: the worker took its message already; neither expired, deferred nor skipped
)

// decision is the verdict on one claimed row with what carrying it out
// needs.
type decision struct {
	verdict verdict
	// status, reason and alertKind ("" for none) of a final verdict
	// (failRow, expireRow, skipRow).
	status, reason, alertKind string
	until                     time.Time            // deferRow: when the row is due again
	payload                   notification.Payload // publishRow: the message, OutboxID and DedupKey set
}

// decide returns the verdict on row at now; a row whose message the
// worker took already (an earlier claim's publish was confirmed, and that
// claim's relay died or lost the lease before marking it) is PUBLISHED
// rather than expired, deferred or skipped: its message reached the
// worker, so none of those would be true, and an EXPIRED alert would tell
// an operator of a loss that did not happen (see decideFresh).
func (ru rules) decide(row claimed, now time.Time, members map[int64]bool, registered map[string]bool) decision {
	d := ru.decideFresh(row, now, members, registered)
	switch {
	case !row.taken || (d.verdict != expireRow && d.verdict != deferRow && d.verdict != skipRow):
		return d
	case ru.expireTaken:
		if d.verdict == expireRow {
			d.alertKind = "" // the canary's bookkeeping: nothing to tell, it thinks
		}
		return d
	}
	return decision{verdict: takenRow, status: "PUBLISHED", reason: "TAKEN_BY_WORKER"}
}

// decideFresh returns the verdict on row at now, as if no copy of it had
// been published before. members maps each member
// re-read to whether they have consent and are active (a member missing
// from it was not found); registered holds the registered test numbers
// (consulted outside production only). In order: a malformed payload
// fails, a past scheduled date expires, an ad at or after the cut-off
// waits, a missing member or withdrawn consent skips, an unregistered
// number outside production skips; anything else is published.
func (ru rules) decideFresh(row claimed, now time.Time, members map[int64]bool, registered map[string]bool) decision {
	// goccy/go-json decodes as encoding/json does (the same tags, the same
	// errors on a wrong type) in a third of the CPU: the decode was a
	// quarter of the relay's own CPU per message (make bench, CPU per
	// message).
	var p notification.Payload
	if err := json.Unmarshal(row.payload, &p); err != nil {
		return decision{verdict: failRow, status: "FAILED", reason: "MALFORMED_PAYLOAD", alertKind: history.AlertRelayFailed}
	}
	today := clock.Date(now)
	switch {
	case ru.expire && row.scheduledDate.Before(time.Date(today.Year(), today.Month(), today.Day(), 0, 0, 0, 0, time.UTC)):
		return decision{verdict: expireRow, status: "EXPIRED", reason: "SCHEDULED_DATE_PASSED", alertKind: history.AlertExpired}
	case ru.deferAds && row.advertising && ru.adBlocked(now):
		return decision{verdict: deferRow, until: ru.adResume(now)}
	}
	if ok, known := members[p.MemberID]; !known || !ok {
		reason := "NO_SMS_CONSENT"
		if !known {
			reason = "MEMBER_NOT_FOUND"
		}
		return decision{verdict: skipRow, status: "SKIPPED", reason: reason}
	}
	if !ru.cfg.Production && !registered[p.Phone] {
		return decision{verdict: skipRow, status: "SKIPPED", reason: "NON_PRODUCTION_NUMBER"}
	}
	p.OutboxID, p.DedupKey = row.id, row.dedupKey
	return decision{verdict: publishRow, payload: p}
}

// adBlocked reports whether ads may not be published at now: at or after
// AdPublishCutoff, or before AdResumeAt.
func (ru rules) adBlocked(now time.Time) bool {
	m := now.Hour()*60 + now.Minute()
	return m >= ru.cfg.AdPublishCutoff.Minutes() || m < ru.cfg.AdResumeAt.Minutes()
}

// adResume is the next AdResumeAt after now.
func (ru rules) adResume(now time.Time) time.Time {
	t := ru.cfg.AdResumeAt.On(now)
	if !t.After(now) {
		t = ru.cfg.AdResumeAt.On(clock.At(now, 12, 0).Add(24 * time.Hour))
	}
	return t
}

// retry is what a failed publish of a row does: its attempt number, when
// it is due again, and whether this attempt raises the alert (the
// AlertAttempt-th failure).
type retry struct {
	attempt int
	next    time.Time
	alert   bool
}

// failure returns the retry of row after a failed publish at now. The
// relay never gives up on a row: after the last backoff step the last
// step repeats.
func (ru rules) failure(row claimed, now time.Time) retry {
	attempt := row.attempts + 1
	wait := ru.cfg.BackoffFor(attempt)
	if ru.flatBackoff {
		wait = ru.cfg.BackoffFor(1)
	}
	return retry{attempt: attempt, next: now.Add(wait), alert: attempt == ru.cfg.AlertAttempt}
}

// inWindow reports whether t is inside the relay's daily window.
func (ru rules) inWindow(t time.Time) bool { return ru.cfg.InRelayWindow(t) }

// Package canary names the deliberately broken variants of the pipeline:
// real mistakes from this design's history and its peers, compiled in and
// switched on at run time with OUTBOXCHAOS_BUG=<name>, so the chaos suite can
// prove it catches each one.
//
// The process's entry point (cmd/) reads the variable once at start-up with
// FromEnv and arms the canary with Arm. Each component asks On once, when it
// is built, and keeps the variant it chose (a statement, a policy) in its
// own fields; the broken SQL is written out in full next to the real
// statement. With nothing armed every component keeps its normal code.
//
// A canary must never be enabled in production: the entry point logs a loud
// warning at start-up when one is.
package canary

import (
	"fmt"
	"os"
	"strings"
	"sync/atomic"
)

// EnvVar selects one canary bug.
const EnvVar = "OUTBOXCHAOS_BUG"

// The canary bugs.
const (
	// MarkBeforePublish marks rows PUBLISHED right after the claim, before
	// publishing (the order SPEC §3 forbids: the row looks done, the queue is
	// empty).
	MarkBeforePublish = "mark-before-publish"
	// CheckThenAct sends after the peek without the claim INSERT.
	CheckThenAct = "check-then-act"
	// RetryUnknown retries an unknown vendor outcome (timeout, 5xx) as if it
	// were definitely not sent.
	RetryUnknown = "retry-unknown"
	// ReleaseOnCancel lets a stop cancel steps 3–5 and releases the claim.
	ReleaseOnCancel = "release-on-cancel"
	// NoSkipLocked claims without FOR UPDATE SKIP LOCKED and without the
	// status re-check, so overlapping runs take the same rows.
	NoSkipLocked = "no-skip-locked"
	// NoClaimedBy drops the claimed_by condition from the relay's writes
	// after the claim, so a run that lost its lease still writes.
	NoClaimedBy = "no-claimed-by"
	// AckBeforeResult acks right after the vendor call, before the result
	// is written.
	AckBeforeResult = "ack-before-result"
	// FreshMessageID gives every publish a new message_id.
	FreshMessageID = "fresh-message-id"
	// ReturnedAsPublished ignores basic.return: an unroutable message
	// counts as published.
	ReturnedAsPublished = "returned-as-published"
	// TimeoutAsConfirmed treats a confirm timeout as a confirm.
	TimeoutAsConfirmed = "timeout-as-confirmed"
	// SharedReturns keeps the publisher's basic.returns in one store
	// shared by every window on the channel and drops it when a window
	// replaces the channel (after a nack or a confirm timeout): a later
	// window already sent on that channel loses its returns, and its
	// unroutable message, which RabbitMQ acks after returning it, counts
	// as confirmed.
	SharedReturns = "shared-returns"
	// NoCleanupAlert turns stuck SENDING rows into ERROR without an alert.
	NoCleanupAlert = "no-cleanup-alert"
	// AlertFirstStranded alerts only the first row a cleanup sweep turns
	// into ERROR: the others of the same sweep become ERROR silently. A
	// sweep that finds one stuck row looks right; only several rows
	// stranded in one sweep show it.
	AlertFirstStranded = "alert-first-stranded"
	// RateLimitAsUnknown classifies HTTP 429 as an unknown outcome.
	RateLimitAsUnknown = "rate-limit-as-unknown"
	// SilentAnniversary loses the anniversary notification without an alert.
	SilentAnniversary = "silent-anniversary"
	// NoAdDeferral publishes ads after the 20:40 cut-off.
	NoAdDeferral = "no-ad-deferral"
	// NoExpiry publishes rows whose scheduled date has passed.
	NoExpiry = "no-expiry"
	// PlainInsert enqueues with a plain INSERT instead of insert-ignore.
	PlainInsert = "plain-insert"
	// MigrateUnlocked migrates without the advisory lock.
	MigrateUnlocked = "migrate-unlocked"
	// AckFailedRelease: the worker acks a message whose claim release
	// failed, as if the release had not committed: when it had (its
	// answer lost), the message is gone without a row or an alert of a
	// loss.
	AckFailedRelease = "ack-failed-release"
	// NewestFirst claims the newest due rows first (ORDER BY … DESC): under
	// a backlog larger than a batch the oldest rows wait while younger ones
	// go out. Each is still sent once in the end; only the claim-order
	// age bound catches it.
	NewestFirst = "newest-first"
	// NoReconnect: the worker gives up when its broker connection drops.
	NoReconnect = "no-reconnect"
	// AutoAck acks a delivery as soon as it arrives.
	AutoAck = "auto-ack"
	// NoDedup sends every copy: no peek, no claim.
	NoDedup = "no-dedup"
	// RecentOnly claims only rows created within the last relay interval
	// (windowed polling): a row that missed its run is never relayed.
	RecentOnly = "recent-only"
	// TrustFirstAnswer settles an ERROR row on the vendor's first report,
	// as soon as the row is ERROR: no acceptance deadline, no second
	// lookup. A request still in flight lands after "never received".
	TrustFirstAnswer = "trust-first-answer"
	// ParkWithoutReason parks a message without its x-failure-reason
	// header: the operator who finds it cannot tell why.
	ParkWithoutReason = "park-without-reason"
	// NoAttemptsAlert never raises the relay's alert at the AlertAttempt-th
	// failed publish: a row failing over and over goes unnoticed until it
	// expires. Nothing is lost or sent twice by it; only the alert
	// contract catches it.
	NoAttemptsAlert = "no-attempts-alert"
	// ConsentFirstOnly re-checks consent for the first row of a batch
	// only: the others' members look unknown and are skipped as
	// MEMBER_NOT_FOUND. The pipeline calls them skips; only a checker that
	// asks the members table sees messages owed and never sent.
	ConsentFirstOnly = "consent-first-only"
	// FlatBackoff waits the first backoff step (1 minute) after every
	// failed publish instead of 1·2·4·8·16·30 minutes: a broker that keeps
	// refusing a message gets it every minute. Nothing is lost or sent
	// twice; only the checker's backoff rule catches it.
	FlatBackoff = "flat-backoff"
	// AllOrNothing treats a batch as one unit: when any of its publishes
	// fails, every row of it goes back to PENDING, the confirmed ones too,
	// and is published again. The inbox absorbs the copies; only the
	// checker's republish bound sees the storm.
	AllOrNothing = "all-or-nothing"
	// FirstBrokerOnly dials only the first of several broker addresses: a
	// client that cannot fail over to a live node of the cluster.
	FirstBrokerOnly = "first-broker-only"
	// TransientQueues declares the queues as classic, non-durable ones and
	// publishes transient messages: whatever is queued dies with the
	// broker.
	TransientQueues = "transient-queues"
)

// The canaries only the auditor's invariants catch: each changes what was
// sent, when, to whom, or what an alert said, not how many times a
// message arrived.
const (
	// ExpireTaken expires, defers or skips a reclaimed row as any other,
	// although the worker took its message already (an earlier publish
	// was confirmed), and expires it quietly, as bookkeeping: a message
	// that reached a phone ends reported EXPIRED. No alert is false and
	// nothing is lost; only the statuses the ledger contradicts show it.
	ExpireTaken = "expire-taken"
	// DoubleEnqueue enqueues each grade renewal twice: under its key and
	// under a monthly key of the member's. Each row reaches the phone
	// once; the member gets one business event twice.
	DoubleEnqueue = "double-enqueue"
	// AlertOnRetry raises a PARKED alert when a definitely-not-sent
	// message goes to the retry queue, before it is known to be lost:
	// the retry delivers it and the operator was told of a loss.
	AlertOnRetry = "alert-on-retry"
	// ConsentAtRelayOnly drops the worker's consent re-check: a member
	// who withdrew consent after the relay published still gets the
	// message.
	ConsentAtRelayOnly = "consent-at-relay-only"
	// AdHoursUTC reads the worker's advertising hours on the UTC clock
	// (and sends without the hours' deadline): an ad goes out at 20:55
	// Seoul, 11:55 UTC.
	AdHoursUTC = "ad-hours-utc"
	// RequeueOnDBFailure hands a delivery back to the queue whenever the
	// worker's own database fails its peek or pre-check: each hand-back
	// counts toward the message's delivery limit, so a database outage of
	// a second or two parks every message in flight with a PARKED alert,
	// while a copy of it still in the queue is sent once the database
	// answers.
	RequeueOnDBFailure = "requeue-on-db-failure"
	// AlertBeforePark raises the PARKED alert before the copy is on the
	// parking queue: a park the broker refuses hands the delivery back,
	// a later copy is sent, and the alert told of a loss that never was.
	AlertBeforePark = "alert-before-park"
	// ParkUnrecorded parks a message without a FAILED history row (the
	// claim released first; at the delivery limit, none taken): a second
	// copy of the message, a relay's republish, finds no row and is sent
	// after the PARKED alert told of its loss.
	ParkUnrecorded = "park-unrecorded"
)

// AlertAfterCommit commits a row's final status (EXPIRED, FAILED) before
// the relay sends the alert that tells of it: a relay that dies between
// the commit and the post leaves a final row no one looks at again, and
// no alert. Only a crash in that window shows it: the crash points that
// lie between each state change and its alert, run in full.
const AlertAfterCommit = "alert-after-commit"

// Names lists every canary.
var Names = []string{MarkBeforePublish, CheckThenAct, RetryUnknown, ReleaseOnCancel, NoSkipLocked,
	NoClaimedBy, AckBeforeResult, FreshMessageID, ReturnedAsPublished, TimeoutAsConfirmed, NoCleanupAlert,
	RateLimitAsUnknown, SilentAnniversary, NoAdDeferral, NoExpiry, PlainInsert, MigrateUnlocked, NoReconnect,
	AutoAck, NoDedup, RecentOnly, TrustFirstAnswer, ParkWithoutReason, NoAttemptsAlert, ConsentFirstOnly, FlatBackoff, AllOrNothing,
	AckFailedRelease, NewestFirst, AlertFirstStranded, ExpireTaken, DoubleEnqueue, AlertOnRetry, ConsentAtRelayOnly, AdHoursUTC, SharedReturns,
	RequeueOnDBFailure, AlertBeforePark, ParkUnrecorded, AlertAfterCommit}

// InfraNames lists the canaries only the infrastructure scenarios catch
// (scenarios/infra: they need containers, so the canary sweep over Names
// leaves them out).
var InfraNames = []string{FirstBrokerOnly, TransientQueues}

// armed is the armed canary's name ("" for none).
var armed atomic.Pointer[string]

// FromEnv returns the canary named by EnvVar ("" when it is unset or
// blank). An unknown name is an error that lists the known ones.
func FromEnv() (string, error) {
	v := strings.TrimSpace(os.Getenv(EnvVar))
	if v != "" && !Known(v) {
		return "", fmt.Errorf("%s: unknown canary %q (known: %s)", EnvVar, v, strings.Join(Names, ", "))
	}
	return v, nil
}

// Arm enables canary name in this process ("" disables). Components built
// afterwards use its variant; those built before keep theirs.
func Arm(name string) error {
	if name != "" && !Known(name) {
		return fmt.Errorf("unknown canary %q (known: %s)", name, strings.Join(Names, ", "))
	}
	armed.Store(&name)
	return nil
}

// Armed returns the armed canary's name, "" when none is.
func Armed() string {
	if p := armed.Load(); p != nil {
		return *p
	}
	return ""
}

// Known reports whether name is a canary.
func Known(name string) bool {
	for _, n := range append(Names[:len(Names):len(Names)], InfraNames...) {
		if n == name {
			return true
		}
	}
	return false
}

// On reports whether canary name is armed. Components ask it when they are
// built, never on the way through their work.
func On(name string) bool { return name != "" && Armed() == name }

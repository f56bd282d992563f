// Package canary owns the deliberately broken variants of the pipeline: real
// mistakes from this design's history and its peers, compiled in and
// switched on at run time with OUTBOXCHAOS_BUG=<name>, so the chaos suite can
// prove it catches each one. With the variable unset every check is a
// constant-false comparison and the normal code runs.
//
// A canary must never be enabled in production: the process logs a loud
// warning at start-up when one is.
package canary

import (
	"fmt"
	"os"
	"strings"
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
	// NoCleanupAlert turns stuck SENDING rows into ERROR without an alert.
	NoCleanupAlert = "no-cleanup-alert"
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
	// NoReconnect: the worker gives up when its broker connection drops.
	NoReconnect = "no-reconnect"
	// AutoAck acks a delivery as soon as it arrives.
	AutoAck = "auto-ack"
	// NoDedup sends every copy: no peek, no claim.
	NoDedup = "no-dedup"
	// RecentOnly claims only rows created within the last relay interval
	// (windowed polling): a row that missed its run is never relayed.
	RecentOnly = "recent-only"
)

// Names lists every canary.
var Names = []string{MarkBeforePublish, CheckThenAct, RetryUnknown, ReleaseOnCancel, NoSkipLocked,
	NoClaimedBy, AckBeforeResult, FreshMessageID, ReturnedAsPublished, TimeoutAsConfirmed, NoCleanupAlert,
	RateLimitAsUnknown, SilentAnniversary, NoAdDeferral, NoExpiry, PlainInsert, MigrateUnlocked, NoReconnect,
	AutoAck, NoDedup, RecentOnly}

var active string

func init() {
	if v := strings.TrimSpace(os.Getenv(EnvVar)); v != "" {
		if !Known(v) {
			fmt.Fprintf(os.Stderr, "%s: unknown canary %q (known: %s)\n", EnvVar, v, strings.Join(Names, ", "))
			os.Exit(2)
		}
		active = v
		fmt.Fprintf(os.Stderr, "WARNING: canary bug %q is enabled: this process is deliberately broken\n", v)
	}
}

// Known reports whether name is a canary.
func Known(name string) bool {
	for _, n := range Names {
		if n == name {
			return true
		}
	}
	return false
}

// On reports whether canary name is enabled in this process.
func On(name string) bool { return active != "" && active == name }

// Set enables a canary in this process (tests); "" disables.
func Set(name string) { active = name }

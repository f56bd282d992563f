package worker

import (
	"time"

	"github.com/outboxchaos/outboxchaos/system/canary"
)

// policy is how the worker acks, dedups, claims and classifies: the rules
// of design §5, or the armed canary's broken variant of one of them.
type policy struct {
	reconnect     bool // reconnect after the broker connection drops (NoReconnect: false)
	ackOnDelivery bool // ack as soon as a delivery arrives (AutoAck)
	ignorePeek    bool // treat every peek as "no history row" (NoDedup)
	claim         bool // claim with the INSERT before sending (CheckThenAct, NoDedup: false)
	// releaseOnCancel lets a stop cancel steps 3–5 and, after a send cut
	// short, release the claim and requeue (ReleaseOnCancel); normally
	// they run detached from the stop.
	releaseOnCancel  bool
	ackBeforeResult  bool // ack a sent message before writing its result (AckBeforeResult)
	retryUnknown     bool // retry an unknown vendor outcome as not sent (RetryUnknown)
	parkReason       bool // a parked copy carries x-failure-reason (ParkWithoutReason: false)
	ackFailedRelease bool // ack, not requeue, a message whose claim release failed (AckFailedRelease)
	alertOnRetry     bool // alert PARKED when a message goes to the retry queue (AlertOnRetry)
	skipConsent      bool // no consent re-check at the pre-check (ConsentAtRelayOnly)
	utcAdHours       bool // advertising hours on the UTC clock, no deadline at their end (AdHoursUTC)
	// requeueOnDBFailure hands a delivery back when the peek or the
	// pre-check fails on the database (RequeueOnDBFailure); normally the
	// worker holds it and asks again.
	requeueOnDBFailure bool
	alertBeforePark    bool // the PARKED alert before the copy is parked (AlertBeforePark)
	// recordPark writes a park after the vendor's refusals or at the
	// delivery limit into the inbox as FAILED, so that no later copy is
	// sent (ParkUnrecorded: false).
	recordPark bool
}

// policyFor returns the worker's policy with canary bug (a canary name, ""
// for none) armed.
func policyFor(bug string) policy {
	return policy{
		reconnect:        bug != canary.NoReconnect,
		ackOnDelivery:    bug == canary.AutoAck,
		ignorePeek:       bug == canary.NoDedup,
		claim:            bug != canary.CheckThenAct && bug != canary.NoDedup,
		releaseOnCancel:  bug == canary.ReleaseOnCancel,
		ackBeforeResult:  bug == canary.AckBeforeResult,
		retryUnknown:     bug == canary.RetryUnknown,
		parkReason:       bug != canary.ParkWithoutReason,
		ackFailedRelease: bug == canary.AckFailedRelease,
		alertOnRetry:     bug == canary.AlertOnRetry,
		skipConsent:      bug == canary.ConsentAtRelayOnly,
		utcAdHours:       bug == canary.AdHoursUTC,

		requeueOnDBFailure: bug == canary.RequeueOnDBFailure,
		alertBeforePark:    bug == canary.AlertBeforePark,
		recordPark:         bug != canary.ParkUnrecorded,
	}
}

// deadline is the acceptance deadline of a send claimed at claimedAt (the
// AdHoursUTC canary sends without the advertising hours' end).
func (w *Worker) deadline(claimedAt time.Time, advertising bool) time.Time {
	if w.policy.utcAdHours {
		return claimedAt.Add(w.cfg.VendorAcceptWindow)
	}
	return w.cfg.SendDeadline(claimedAt, advertising)
}

package history

// Statuses of an outbox row (the outbox table's status column).
const (
	OutboxPending    = "PENDING"
	OutboxPublishing = "PUBLISHING"
	OutboxPublished  = "PUBLISHED"
	OutboxSkipped    = "SKIPPED"
	OutboxFailed     = "FAILED"
	OutboxExpired    = "EXPIRED"
)

// Statuses of an inbox row (the status column of notification_histories,
// the inbox table).
const (
	InboxSending   = "SENDING"
	InboxResending = "RESENDING" // the reconciler's re-send holds the row
	InboxSent      = "SENT"
	InboxFailed    = "FAILED"
	InboxError     = "ERROR"
)

// Settlements the reconciler writes on an ERROR inbox row it settled (its
// settled column; the Settle event's "how").
const (
	SettledSent   = "RECONCILED_SENT"   // the vendor's final report has it
	SettledFailed = "RECONCILED_FAILED" // the vendor reports a definite failure, or never received it
	SettledResent = "RESENT"            // never received, re-sent, and the re-send was accepted
)

// Kinds of alert (an alert's "kind" field; the Alert event's KeyKind).
const (
	AlertExpired        = "EXPIRED"
	AlertRelayAttempts  = "RELAY_ATTEMPTS"
	AlertRelayFailed    = "RELAY_FAILED"
	AlertSendingTimeout = "SENDING_TIMEOUT"
	AlertVendorUnknown  = "VENDOR_UNKNOWN"
	// AlertResultWriteFailed: a send's result could not be written.
	AlertResultWriteFailed = "RESULT_WRITE_FAILED"
	// AlertClaimReleaseFailed: a claim could not be released (the message
	// is requeued).
	AlertClaimReleaseFailed = "CLAIM_RELEASE_FAILED"
	AlertParked             = "PARKED"
	AlertAnniversaryLost    = "ANNIVERSARY_LOST"
	// The reconciler's audit trail: every settlement is announced, under
	// the settlement's own name.
	AlertReconciledSent   = SettledSent
	AlertReconciledFailed = SettledFailed
	AlertResent           = SettledResent
	AlertReconcileStuck   = "RECONCILE_STUCK" // no settling answer after the bounded lookups
)

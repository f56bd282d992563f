package history

// KeyEvent is the log attribute that names an event: a log line with it is
// an Event.
const KeyEvent = "event"

// Event names the pipeline logs (the KeyEvent attribute). Several pods may
// log the same name (a relay's and a worker's Claim); Event.Pod tells them
// apart.
const (
	// Jobs.
	Job             = "job"              // a batch job run: kind, inserted, existing, lost
	AnniversaryLost = "anniversary-lost" // the anniversary outbox insert failed; lost on purpose

	// Relay.
	Claim         = "claim"          // relay: rows claimed with a lease (KeyIDs, KeyCount); worker: inbox row claimed (KeyMessageID)
	Reclaim       = "reclaim"        // expired leases handed back (KeyIDs, KeyCount)
	Publish       = "publish"        // one publish and its KeyOutcome
	PublishFailed = "publish-failed" // a failed publish backs off (KeyAttempt, KeyFailedAt, KeyNextAttemptAt)
	Mark          = "mark"           // rows marked PUBLISHED (KeyCount)
	LostLease     = "lost-lease"     // a write found the lease gone
	OutboxFinal   = "outbox-final"   // a row reached a final status
	AdDeferred    = "ad-deferred"    // an ad postponed past the cut-off
	WriteFailed   = "write-failed"   // a status write failed
	FirstRun      = "first-run"      // the first relay run
	Run           = "run"            // one relay run
	RunFailed     = "run-failed"     // a relay, cleanup or reconcile run failed

	// Worker.
	ConsumeStart   = "consume-start"
	Reconnect      = "reconnect"
	GaveUp         = "gave-up"
	Delivery       = "delivery" // a copy delivered (KeyMessageID, KeyRedelivered)
	Ack            = "ack"      // a copy acked (KeyStep says at which step, KeyWhy says why, for people)
	AckFailed      = "ack-failed"
	Requeue        = "requeue" // a copy nacked back to the queue
	NackFailed     = "nack-failed"
	PeekFailed     = "peek-failed"
	PrecheckFailed = "precheck-failed"
	Skip           = "skip" // not sent on purpose (KeyReason)
	ClaimFailed    = "claim-failed"
	ClaimLost      = "claim-lost"
	VendorCall     = "vendor-call" // a send request and its KeyOutcome
	Result         = "result"      // the send's result written (KeyStatus)
	ResultFailed   = "result-failed"
	ResultLate     = "result-late"
	Release        = "release" // the inbox claim deleted: definitely not sent
	ReleaseFailed  = "release-failed"
	Park           = "park"         // a copy moved to the parking queue (KeyReason)
	Republish      = "republish"    // a copy republished, logged before the publish (KeyTo)
	RetryFailed    = "retry-failed" // the republish to the retry queue failed: requeued
	ParkFailed     = "park-failed"  // the republish to the parking queue failed: requeued

	// Cleanup.
	CleanupSkip    = "cleanup-skip"
	SendingTimeout = "sending-timeout"
	CleanupSweep   = "cleanup-sweep" // a sweep committed: KeyCount rows turned ERROR in it (logged only when it turned any)

	// Reconciler.
	Lookup          = "lookup"
	Settle          = "settle"
	SettleLost      = "settle-lost"
	ReconcileFailed = "reconcile-failed"
	ReconcileRun    = "reconcile-run"
	ResendClaim     = "resend-claim"

	// Alerts.
	Alert       = "alert" // an alert raised (KeyKind)
	AlertFailed = "alert-failed"

	// Commands.
	Start    = "start"    // a pipeline command started (its settings)
	Stop     = "stop"     // the command stopped
	Stopping = "stopping" // a pipeline command was asked to stop (SIGTERM) and is finishing what it holds

	// Peers with a broker of their own (peers/jetstream).
	Locked           = "locked"            // rows locked FOR UPDATE for one publish transaction (KeyCount)
	AlreadyProcessed = "already-processed" // the consumer's processed table held the copy: not sent again
	PullFailed       = "pull-failed"       // a consumer's fetch from its broker failed
	Disconnect       = "disconnect"        // the broker connection was lost (Reconnect: it is back)

	// Peer windows (peers/river's rescuer race).
	RaceCompleted  = "completed-after-fetch" // the job's completion is written: the rescuer is released
	RaceTimeout    = "race-timeout"          // the race gave up waiting
	RescuerFetched = "rescuer-fetched"       // the rescuer fetched the stuck job; held until the job completes
	WorkHeld       = "work-held"             // the job is held until the rescuer fetches it

	// Peer relays (peers/): what their adapters log beside Publish,
	// VendorCall, FirstRun and Start.
	PeerEnqueue = "peer-enqueue" // a row enqueued into the peer's own outbox (KeyMessageID)
	BatchFailed = "batch-failed" // send-then-record: a batch run failed
	Recorded    = "recorded"     // send-then-record: a send's outcome recorded (KeyStatus)
)

// Attribute keys the readers of a history use.
const (
	KeyMessageID     = "message_id"
	KeyOutboxID      = "outbox_id"
	KeyDedupKey      = "dedup_key"
	KeyIDs           = "ids"   // a JSON array of outbox ids
	KeyCount         = "count" // how many rows
	KeyOutcome       = "outcome"
	KeyStatus        = "status"
	KeyReason        = "reason"
	KeyKind          = "kind"
	KeyWhy           = "why"  // prose for people; never compared
	KeyStep          = "step" // where a worker settled a copy: a Step* value
	KeyTo            = "to"   // Republish: the routing key (ToRetry, ToParking)
	KeyRedelivered   = "redelivered"
	KeyAttempt       = "attempt"
	KeyFailedAt      = "failed_at"
	KeyNextAttemptAt = "next_attempt_at"
	KeyClaimed       = "claimed"
	KeyErr           = "err"
	KeyCode          = "code" // VendorCall: the vendor's result code (or the client's, e.g. TIMEOUT, CONN_REFUSED)
	// KeyBegan is the wall time (RFC 3339) at which the logged operation
	// began, taken before its first statement was sent: a relay's Claim
	// carries it. ParseLine turns it into Event.Took.
	KeyBegan = "began"
	// KeyNow is the time (RFC 3339) the logged decision was taken at, by
	// the logging pod's clock: a relay's Claim carries the time its rows'
	// verdicts (the advertising cut-off among them) were decided at.
	KeyNow = "now"
)

// Steps at which a worker acks a copy (Ack's KeyStep).
const (
	StepAutoAck = "auto-ack" // acked on delivery (the canary that acks first)
	StepPeek    = "peek"     // an inbox row exists: the copy is skipped at the peek
	StepSkip    = "skip"     // not sent on purpose
	StepClaim   = "claim"    // another copy holds the claim
	StepSent    = "sent"     // the send's outcome is written (or known)
	StepUnknown = "unknown"  // the vendor's outcome is unknown: ERROR, never retried
	StepRelease = "release"  // the claim could not be released
	StepRetry   = "retry"    // republished to the retry queue
	StepPark    = "park"     // republished to the parking queue
)

// Republish destinations (KeyTo): the routing keys of system/broker.
const (
	ToRetry   = "retry"
	ToParking = "parking"
)

// Publish outcomes (Publish's KeyOutcome), as system/publisher names them.
const (
	OutcomeConfirmed     = "confirmed"
	OutcomeNacked        = "nacked"
	OutcomeReturned      = "returned"
	OutcomeTimedOut      = "timed-out"
	OutcomeChannelClosed = "channel-closed"
	OutcomeWriteFailed   = "write-failed"
	OutcomeFailed        = "failed" // a peer's publish failed, as its library reports it (no finer class)
)

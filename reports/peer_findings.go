package reports

// PeerFindings classifies each violation (and each notable difference)
// found by make peers, keyed "impl/case". They are written by hand after
// reading the run's timeline and record; a violation without an entry is
// reported as not yet classified.
var PeerFindings = map[string]Finding{
	"river047/peer-rescuer-race": {
		Class: "bug in the peer (River #1302, fixed in v0.48.0 by PR #1373)",
		How: "The same adapter, case and forced window pass on v0.51.2 and fail on v0.47.0: the only difference is River's version. " +
			"The v0.47.0 driver's JobRescueMany updates `WHERE river_job.id = updated_job.id` only; v0.51.2 adds `AND river_job.state = 'running' AND river_job.attempted_at < @stuck_horizon`, so a job completed between the rescuer's fetch and its update is no longer set back to retryable. " +
			"The standalone program reproduces it with no harness, no RabbitMQ and no adapter (v0.47.0: worked 2 times, v0.51.2: once). " +
			"End to end the contract holds — the second publish carries the same message_id and the inbox absorbs it — so it shows as a copy at the broker and as the case's own rule (one confirmed publish of a completed job) failing.",
		Program: "reports/peers/river-rescuer-race/main.go",
	},
	"watermill-offsets/peer-pg-cut": {
		Class: "documented limitation",
		How: "Every message of the batch is published again after the relay's Postgres connection is cut: the subscriber reads up to SubscribeBatchSize (default 100) messages in one transaction and acks them in it, so a lost connection rolls back every ack of the batch. " +
			"watermill-sql documents it on SubscribeBatchSize (\"Higher value, increases a chance of message re-delivery in case of crash or networking issues. 1 is the safest value\"). Same in the queue schema. The inbox absorbs the copies: 0 at the handset.",
	},
	"watermill-queue/peer-pg-stall": {
		Class: "documented limitation",
		How:   "As peer-pg-cut: the stalled connection breaks the batch's transaction and all of its messages are published again (SubscribeBatchSize's documented trade-off). The inbox absorbs the copies.",
	},
	"watermill-offsets-confirm/peer-confirm-late": {
		Class: "limitation (not documented)",
		How:   "With ConfirmDelivery, watermill-amqp's Publish waits for each confirm with no deadline (`channel.Delivered()` blocks until the confirm or the channel closes), one message at a time: 1.5 s late confirms hold each message 1.5 s, and a confirm that never comes is bounded only by the AMQP heartbeat. No copies, nothing lost; throughput and liveness, not safety. Read in publisher.go of watermill-amqp v3.0.2; the config's doc only says confirms \"may negatively impact performance\".",
	},
	"watermill-offsets/peer-crash-before-mark": {
		Class: "documented limitation",
		How:   "All six messages reach the broker twice, not one: the subscriber hands the whole batch it read to the forwarder and writes one ack (the offsets upsert of the batch's last row) afterwards, so a crash before that write republishes the batch. SubscribeBatchSize's documented trade-off again; our relay republishes the six of its batch too (its lease), River only the jobs it had not completed. The inbox absorbs the copies.",
	},
	"watermill-offsets/peer-publish-lost": {
		Class: "limitation (not documented)",
		How:   "Publish frames dropped on the way to RabbitMQ hold the forwarder about 30 s — until the AMQP heartbeat closes the connection — whether confirms are on or off: with ChannelPoolSize 0 (the default) every Publish first opens a channel and waits for channel.open-ok, and with confirms it waits for the confirm without a deadline. That round trip is also why confirms-off Watermill did not lose the dropped publish silently here: the publish never went out. Nothing lost, nothing twice; our relay and River's job (our publisher) give up after the 600 ms confirm deadline and republish at once.",
	},
	"watermill-offsets/peer-stale": {
		Class: "documented design",
		How:   "relay-2 never takes over while relay-1 is stalled: the offsets adapter locks the consumer group's row FOR UPDATE in the transaction that spans the publish (documented on DefaultPostgreSQLOffsetsAdapter), so one relay at a time works a consumer group and a stalled one holds up the rest until its connection or AckDeadline gives. Nothing copied, nothing lost; the queue schema behaves the same with its row locks.",
	},
}

package reports

// PeerFindings classifies each violation (and each notable difference)
// found by make peers, keyed "impl/case". They are written by hand after
// reading the run's timeline and record; a violation without an entry is
// reported as not yet classified.
var PeerFindings = map[string]Finding{
	"sendrecord/peer-crash-after-publish": sendRecordCrash("relay.after-publish"),
	"sendrecord/peer-crash-after-confirm": sendRecordCrash("relay.after-confirm"),
	"sendrecord/peer-crash-before-mark":   sendRecordCrash("relay.before-mark"),
	"sendrecord/peer-overlap": {
		Class: "limitation of the design (not documented)",
		How: "Three batch runs started together each read the same due list — the design has no claim, only the history row written after each send — and each called the vendor for nearly every member: 55 of 60 reached a phone more than once. " +
			"The seed assumed one run at a time (a daily schedule); nothing enforces it. Told by the timeline: relay-1, relay-2 and relay-3 log vendor-call SENT for the same message ids within milliseconds; our relay's claim (one committed UPDATE … SKIP LOCKED) splits the same 60 rows with none twice.",
	},
	"jetstream/peer-consumer-crash-after-send": {
		Class: "limitation of the design (not documented)",
		How: "Consumer idempotency is the JetStream design's last line, and it is written after the side effect: worker-1 called the vendor for notification-outbox-1, the vendor accepted it, and worker-1 died at `worker.after-send` before its processed-table row committed and before the ack. " +
			"JetStream redelivered the copy after the ack wait (deliveries=2); the table had no row, so worker-2 called the vendor again: one message reached a phone twice. No other order helps: recording before the call loses the message on the same crash. " +
			"Told from an adapter mistake by the timeline (vendor-call SENT in worker-1, KILLPOINT, redelivery, vendor-call SENT in worker-2) and by our worker on the same case: its claim commits before the vendor call, so the redelivery is acked at the peek and the cleanup turns the SENDING row into ERROR with a SENDING_TIMEOUT alert — delivered once, the unknown outcome told.",
	},
	"jetstream/peer-js-resend-outside-window": {
		Class: "documented limitation of the design (the JetStream design: broker-side dedup is a time-limited net; consumer idempotency stays the last line)",
		How: "The window was forced by the broker's own word, not a sleep: relay-1 published notification-outbox-1 and froze before its commit, holding the row lock; the harness waited until JetStream stored a probe id again (dedup_expired), then killed relay-1. " +
			"Its transaction rolled back, relay-2 took the row and republished it: JetStream acked it as new (`duplicate=false`, a second stream sequence) and delivered it again; the consumer found the id in its table (`already-processed`) and acked without a send. " +
			"Delivered once; the layer that stopped it is the consumer's, as the JetStream design says it must be past the window.",
	},
	"jetstream/peer-js-crash": {
		Class: "observation (kept the contract)",
		How: "Copies at the consumer with no republish behind them: messages the consumer had processed and acked came back after JetStream was SIGKILLed and started on its store, with `deliveries=1` — nats-server v2.9.10's file store had not yet written the durable consumer's delivered and ack state, so the restarted server delivered them as new (one ack was even sent while the server was down; nats.go's Ack does not wait for the server). " +
			"The consumer's table stopped every one (`already-processed`). The relay's publish that timed out during the outage had been stored: its republish was answered as a duplicate (broker dedup). Told by the timeline of the run (acked, SIGKILL, already-processed with deliveries=1).",
	},
	"watermill-offsets/peer-unroutable":         watermillUnroutable,
	"watermill-offsets-confirm/peer-unroutable": watermillUnroutable,
	"watermill-queue/peer-unroutable":           watermillUnroutable,
	"watermill-queue-confirm/peer-unroutable":   watermillUnroutable,
	"watermill-offsets/peer-queue-full":         watermillNoConfirms,
	"watermill-queue/peer-queue-full":           watermillNoConfirms,
	"sendrecord/peer-random-1":                  sendRecordRandom,
	"sendrecord/peer-random-3":                  sendRecordRandom,
	"sendrecord/peer-random-outside-2":          sendRecordRandom,
	"sendrecord/peer-deadline-1":                sendRecordOverlap,
	"sendrecord/peer-deadline-2":                sendRecordOverlap,
	"sendrecord/peer-deadline-3":                sendRecordOverlap,
	"sendrecord/peer-pg-cut": {
		Class: "documented limitation of the design (the send-then-record design: a failure between the call and the record sends twice)",
		How: "No crash: the vendor accepted notification-outbox-12 as the batch's Postgres connection was cut, so its history row was never written; the batch's next run found no row and called the vendor again. " +
			"Told from an adapter mistake by the timeline (vendor-call SENT for the same id twice, the cut between them) and by our relay on the same case: no copy at the handset, because its publish and mark are guarded by the outbox row and the worker's inbox claim comes before the vendor call.",
	},
	"node-relay/peer-crash-after-publish": {
		Class: "observation (kept the contract)",
		How: "No copy at the broker, where our relay shows six: relay-1 died at `relay.after-publish` and no delivery of its batch reached the worker before relay-2 published it once. " +
			"Our reading, not traced at the socket: amqplib's publish returns once the frames are queued for Node's event loop, which writes them only after the synchronous code that hits the point, so in Node this point behaves as before the publish. " +
			"The same relay at `relay.after-confirm` and `relay.before-mark` shows the six copies, so the row lock held across the publish does republish as the JetStream design says.",
	},
	"river047/peer-rescuer-race": {
		Class: "bug in the peer (River #1302, fixed in v0.48.0 by PR #1373)",
		How: "The same adapter, case and forced window pass on v0.51.2 and fail on v0.47.0: the only difference is River's version. " +
			"The v0.47.0 driver's JobRescueMany updates `WHERE river_job.id = updated_job.id` only; v0.51.2 adds `AND river_job.state = 'running' AND river_job.attempted_at < @stuck_horizon`, so a job completed between the rescuer's fetch and its update is no longer set back to retryable. " +
			"The standalone program reproduces it with no harness, no RabbitMQ and no adapter (v0.47.0: worked 2 times, v0.51.2: once). " +
			"End to end the contract holds — the second publish carries the same message_id and the inbox absorbs it — so it shows as a copy at the broker and as the case's own rule (one confirmed publish of a completed job) failing.",
		Program: "reports/peers/river-rescuer-race/main.go",
	},
	"watermill-offsets-confirm/peer-pg-cut": {
		Class: "documented limitation",
		How: "Every message of the batch is published again after the relay's Postgres connection is cut: the subscriber reads up to SubscribeBatchSize (default 100) messages in one transaction and acks them in it, so a lost connection rolls back every ack of the batch. " +
			"watermill-sql documents it on SubscribeBatchSize (\"Higher value, increases a chance of message re-delivery in case of crash or networking issues. 1 is the safest value\"). Same in the queue schema. The inbox absorbs the copies: 0 at the handset. Whether the cut lands inside a batch's transaction is timing: in the run of this report it did for both confirm configurations (30 copies each) and not for the confirms-off ones (0), where the batch had already committed.",
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

// sendRecordCrash is the finding of the send-then-record design killed
// between the vendor call and the history row.
func sendRecordCrash(point string) Finding {
	return Finding{
		Class: "documented limitation of the design (the send-then-record design: a crash between the call and the record sends twice — the reason the outbox exists)",
		How: "The batch called the vendor for notification-outbox-1, the vendor accepted it (the handset ledger has it), and relay-1 died at `" + point + "` before writing its history row; relay-2's run found no row and called the vendor again: one message reached the phone twice. " +
			"Told from an adapter mistake by the timeline (vendor-call SENT for the same id in relay-1 and relay-2, KILLPOINT between them) and by the adapter being the design's two steps in the design's order (vendor call, then INSERT of the history row, peers/sendrecord); " +
			"our relay on the same case puts copies on the broker, which the worker's inbox absorbs: none at the handset.",
	}
}

// sendRecordRandom is the finding of a random schedule against the
// send-then-record design.
var sendRecordRandom = Finding{
	Class: "documented limitation of the send-then-record design, compounded by overlapping runs",
	How: "Two or three supervised batch runs with kill-points after the call: each kill between a vendor call and its history row sends that member again, and runs alive at the same time send the same due members (no claim). " +
		"Every duplicate in the timeline is a vendor-call SENT by two runs for one id; our relay, River and Watermill keep the contract on the same schedule.",
}

// sendRecordOverlap is the finding of the send-then-record design when two
// batch runs relay at once (the deadline cases start two replicas).
var sendRecordOverlap = Finding{
	Class: "limitation of the design (not documented)",
	How: "Two batch runs started together, as two replicas of a deployment, each read the same due list (the design has no claim, only the history row written after each send) and called the vendor for the same members; the fault held across the batch interval changes how many. " +
		"Told by the timeline: relay-1 and relay-2 log vendor-call SENT for the same message ids within milliseconds; our relay's claim splits the same rows with none twice, as `peer-overlap` shows.",
}

// watermillUnroutable is the finding of every Watermill configuration on
// an unroutable publish.
var watermillUnroutable = Finding{
	Class: "limitation of the library (not documented)",
	How: "watermill-amqp v3.0.2 publishes with `Publish.Mandatory` false unless told otherwise (our adapter keeps the default) and listens for no returns (the package calls no `NotifyReturn`): with the main queue unbound, RabbitMQ dropped notification-outbox-2 — and confirmed it, where confirms are on — and the forwarder counted it published. Lost silently. " +
		"Setting Mandatory alone would not help: the return would reach a channel nobody reads, and the confirm that follows a return still counts as delivered. " +
		"Told by the timeline (the publish logged without error while the binding was gone, no delivery at the worker) and by our relay and the Node.js relay on the same case, which see the return and publish again once the binding is back.",
}

// watermillNoConfirms is the finding of a Watermill configuration without
// publisher confirms on a full queue.
var watermillNoConfirms = Finding{
	Class: "documented limitation (confirms off)",
	How: "With `ConfirmDelivery` false, Publish returns once the frame is written: the full queue (x-max-length 2, reject-publish) nacked the publishes past its limit, nobody waited for the nack, and the forwarder counted them published. Lost silently. " +
		"watermill-amqp documents the choice on ConfirmDelivery (\"Setting this value to true may negatively impact performance but will increase reliability\"); the same Watermill configurations with confirms see the nack as an error and publish again.",
}

// Package peers is the registry of relays under test: each peer declares
// how it is run, how the harness reads what it thinks became of every
// message, what it can be broken at (its features) and the deadlines it
// keeps — as Watermill's pub/sub test suite has each Pub/Sub declare its
// Features. The peer cases (scenarios/catalogue/peers.go) read only these
// declarations: adding a peer is one entry here plus its adapter, or, for
// a relay given only as a command line (the process contract,
// docs/relay-contract.md), one Describe at run time.
//
// It imports no peer library (River builds in nested modules,
// peers/river).
package peers

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	kp "github.com/outboxchaos/outboxchaos/system/killpoint"
)

// Ours is our own relay (system/relay) through the same seam.
const Ours = "ours"

// Peer is one relay under test.
type Peer struct {
	Name string `json:"name"`
	// Binary is the seam binary (bin/<Binary>, peers/seam.Main) whose
	// relay, job and migrate pods run the peer with --impl Name. Empty
	// with no Command: outboxchaos itself (ours).
	Binary string `json:"binary,omitempty"`
	// Command is a relay given as a command line (the process contract):
	// its relay pods run it; the batch jobs and migrations are ours.
	Command []string `json:"command,omitempty"`
	// Migrate is a command-line relay's own migration, run once after
	// ours (nil: none).
	Migrate []string `json:"migrate,omitempty"`
	// Status is the SQL that returns (outbox id, PUBLISHED|PENDING|FAILED)
	// for every message in the peer's own outbox; "" when the peer marks
	// our notification_outbox itself.
	Status   string   `json:"status,omitempty"`
	Features Features `json:"features"`
	// Deadlines are the durations the peer keeps, compressed as the
	// scenarios run them, so a schedule can be drawn across them.
	Deadlines []Deadline `json:"deadlines,omitempty"`
	// Settings are a command-line relay's settings as it declares them
	// ("name=value<TAB>why"); a seam binary prints its own (settings).
	Settings []string `json:"settings,omitempty"`
}

// Features is what a peer can be broken at and shows, as Watermill's
// tests.Features is what a Pub/Sub supports. A peer case that needs a
// feature the peer lacks is not applicable, with the reason.
type Features struct {
	// KillPoints are the kill-points its relay honours
	// (OUTBOXCHAOS_KILLPOINT=point:N: print "KILLPOINT point hit N" on
	// stderr, then SIGKILL itself).
	KillPoints []string `json:"killpoints"`
	// Broker: the relay publishes to our RabbitMQ exchange (the
	// rabbitmq-relay link carries its traffic).
	Broker bool `json:"broker"`
	// NoConfirms: the relay publishes without publisher confirms (a
	// publish is done once written), which the contract allows. A case
	// whose fault delays what RabbitMQ sends the relay (its confirms) has
	// nothing to delay, and is not applicable.
	NoConfirms bool `json:"no_confirms,omitempty"`
	// ChannelPerPublish: the relay opens a channel for each publish and
	// waits for RabbitMQ's answer before it publishes. A case that holds
	// back what RabbitMQ sends the relay until one of its messages reaches
	// a handset waits for a publish that cannot come, and is not
	// applicable.
	ChannelPerPublish bool `json:"channel_per_publish,omitempty"`
	// PublishEvents: the relay logs each publish's outcome as a JSON line
	// {"event":"publish","outcome":"confirmed|failed|timed-out|nacked|…"}.
	PublishEvents bool `json:"publish_events"`
	// Windows are peer-specific windows the harness can force by name
	// (e.g. "river-rescuer-race").
	Windows []string `json:"windows,omitempty"`
	// Consumer: the peer brings its own consumer, which worker pods run
	// (the seam binary's consume) instead of our worker; it calls the
	// vendor as our worker does. Its kill-points (worker.*) are in
	// KillPoints. Without it, our worker consumes, and every worker.*
	// kill-point is honoured.
	Consumer bool `json:"consumer,omitempty"`
	// JetStream: the relay publishes to, and the consumer reads from, a
	// JetStream the run starts for it (a nats-server child on a private
	// port, reached through the links nats-relay and nats-worker; the
	// node "nats" of the infrastructure faults). Nil: no JetStream.
	JetStream *JetStream `json:"jetstream,omitempty"`
}

// JetStream is what the harness needs to know of a peer's stream.
type JetStream struct {
	Stream string `json:"stream"`
	// ProbeSubject is a subject of the stream that no consumer reads: the
	// harness publishes its duplicate-window probe there (condition
	// dedup_expired).
	ProbeSubject string `json:"probe_subject"`
}

// NATSURLEnvVar carries the run's JetStream URL (nats://host:port, a
// Toxiproxy link) to the pods of a peer with Features.JetStream.
const NATSURLEnvVar = "OUTBOXCHAOS_NATS_URL"

// HasWorkerPoint reports whether kill-point p (a worker.* point) is
// honoured by whoever consumes the peer's messages: its own consumer if
// it declares the point; else our worker, which honours them all — if the
// peer publishes to RabbitMQ, where our worker reads (a peer that neither
// publishes there nor brings a consumer, like the send-then-record batch,
// has no consumer to break).
func (f Features) HasWorkerPoint(p string) bool {
	if f.Consumer {
		return f.HasKillPoint(p)
	}
	return f.Broker
}

// Deadline is one duration a peer keeps.
type Deadline struct {
	Name  string `json:"name"`
	Value string `json:"value"` // as the scenarios run it (compressed)
	Why   string `json:"why"`
}

// HasKillPoint reports whether the peer's relay honours kill-point p.
func (f Features) HasKillPoint(p string) bool { return slices.Contains(f.KillPoints, p) }

// HasWindow reports whether the peer has the named window.
func (f Features) HasWindow(w string) bool { return slices.Contains(f.Windows, w) }

// relayPoints are the relay kill-points of the seam: after the claim,
// after the publish, after the confirm, before the "done" write.
var relayPoints = []string{kp.RelayAfterClaim, kp.RelayAfterPublish, kp.RelayAfterConfirm, kp.RelayBeforeMark}

// watermillStatus reads the default schema's offsets: acked is at or
// before the consumer group's (transaction, offset) cursor, as the
// subscriber's select reads it.
const watermillOffsetsStatus = `SELECT substring(m.payload->>'uuid' from 'notification-outbox-(\d+)')::bigint,
	CASE WHEN o.consumer_group IS NOT NULL AND (m.transaction_id < o.last_processed_transaction_id
		OR (m.transaction_id = o.last_processed_transaction_id AND m."offset" <= o.offset_acked))
	THEN 'PUBLISHED' ELSE 'PENDING' END
	FROM "watermill_forwarder_topic" m
	LEFT JOIN "watermill_offsets_forwarder_topic" o ON o.consumer_group = ''`

const watermillQueueStatus = `SELECT substring(payload->>'uuid' from 'notification-outbox-(\d+)')::bigint,
	CASE WHEN acked THEN 'PUBLISHED' ELSE 'PENDING' END FROM "watermill_forwarder_topic"`

const riverStatus = `SELECT (args->>'outbox_id')::bigint,
	CASE state::text WHEN 'completed' THEN 'PUBLISHED' WHEN 'discarded' THEN 'FAILED' WHEN 'cancelled' THEN 'FAILED'
	ELSE 'PENDING' END FROM river_job`

const (
	noConfirms        = "confirms off: Publish returns once written"
	unboundedConfirms = "watermill-amqp waits for each confirm without a deadline"
)

// watermill is one Watermill configuration's entry: its AMQP Publish
// writes and awaits the confirm in one call, so it has no point between
// the publish and the confirm. With confirms or without, every Publish
// first opens a channel and waits for RabbitMQ's answer: without confirms
// it still declares none missing (NoConfirms false), since the cases that
// delay what RabbitMQ sends the relay reach it, and those that hold it
// back until a message is delivered cannot (ChannelPerPublish).
func watermill(name, status, why string) Peer {
	return Peer{Name: name, Binary: "peer-watermill", Status: status,
		Features: Features{KillPoints: []string{kp.RelayAfterClaim, kp.RelayAfterConfirm, kp.RelayBeforeMark}, Broker: true, PublishEvents: true,
			ChannelPerPublish: true},
		Deadlines: []Deadline{{"confirm-timeout", "none", why}}}
}

func river(name string) Peer {
	return Peer{Name: name, Binary: "peer-" + name, Status: riverStatus,
		Features: Features{KillPoints: relayPoints, Broker: true, PublishEvents: true, Windows: []string{"river-rescuer-race"}},
		Deadlines: []Deadline{
			{"confirm-timeout", "600ms", "our publisher's, compressed from 5 s"},
			{"rescue-stuck-jobs-after", "1.5s", "the adapter's setting, as our lease"},
			{"rescuer-interval", "30s", "River's, not configurable"},
		}}
}

// registry is every peer make peers runs, ours first.
var registry = []Peer{
	{Name: Ours, Features: Features{KillPoints: relayPoints, Broker: true, PublishEvents: true},
		Deadlines: []Deadline{
			{"lease", "1.5s", "15 min compressed"},
			{"confirm-timeout", "600ms", "5 s compressed"},
			{"relay-interval", "100ms", "5 min compressed"},
		}},
	watermill("watermill-offsets", watermillOffsetsStatus, noConfirms),
	watermill("watermill-offsets-confirm", watermillOffsetsStatus, unboundedConfirms),
	watermill("watermill-queue", watermillQueueStatus, noConfirms),
	watermill("watermill-queue-confirm", watermillQueueStatus, unboundedConfirms),
	river("river047"),
	river("river0512"),
	{Name: "jetstream", Binary: "peer-jetstream", Status: jetStreamStatus,
		Features: Features{KillPoints: append(slices.Clone(relayPoints), kp.WorkerAfterSend, kp.WorkerAfterResult),
			PublishEvents: true, Consumer: true,
			JetStream: &JetStream{Stream: "NOTIFICATIONS", ProbeSubject: "notifications.probe"}},
		Deadlines: []Deadline{
			{"duplicate-window", "2s", "the stream's Duplicates: design §7's 2 minutes compressed 60×"},
			{"ack-wait", "3s", "the consumer's: JetStream's 30 s default compressed 10×"},
			{"publish-timeout", "600ms", "our confirm timeout (nats.go's 5 s compressed)"},
			{"relay-interval", "100ms", "5 min compressed"},
		}},
	{Name: "sendrecord", Binary: "peer-sendrecord", Status: sendRecordStatus,
		Features: Features{KillPoints: relayPoints},
		Deadlines: []Deadline{
			{"batch-interval", "100ms", "the batch's schedule (a daily run), compressed"},
			{"skip-window", "the run's day", "a member with a history row of the day is skipped"},
		}},
}

// sendRecordStatus: a message is done once its history row is recorded
// (peers/sendrecord records notification_histories, the history table of
// the send-then-record design).
const sendRecordStatus = `SELECT o.id, CASE WHEN h.dedup_key IS NULL THEN 'PENDING' ELSE 'PUBLISHED' END
	FROM notification_outbox o LEFT JOIN notification_histories h ON h.dedup_key = o.dedup_key`

// jetStreamStatus: the JetStream design's outbox marks a row by its published_at
// (peers/jetstream).
const jetStreamStatus = `SELECT id, CASE WHEN published_at IS NULL THEN 'PENDING' ELSE 'PUBLISHED' END FROM js_outbox`

// registryMu guards registry: Add may register a peer while runs look
// peers up (the chaos suite registers the Node.js relay beside them).
var registryMu sync.RWMutex

// All returns every registered peer, in registry order.
func All() []Peer {
	registryMu.RLock()
	defer registryMu.RUnlock()
	return append([]Peer(nil), registry...)
}

// Lookup returns the peer called name ("" is ours), or an error naming
// the known ones.
func Lookup(name string) (Peer, error) {
	if name == "" {
		name = Ours
	}
	for _, p := range All() {
		if p.Name == name {
			return p, nil
		}
	}
	return Peer{}, fmt.Errorf("unknown implementation %q (known: %s)", name, strings.Join(Names(), ", "))
}

// Add registers p (a relay given as a command line); a name taken is an
// error.
func Add(p Peer) error {
	if p.Name == "" {
		return fmt.Errorf("a peer needs a name")
	}
	registryMu.Lock()
	defer registryMu.Unlock()
	for _, q := range registry {
		if q.Name == p.Name {
			return fmt.Errorf("implementation %q is already registered", p.Name)
		}
	}
	registry = append(registry, p)
	return nil
}

// Names lists the peers' names, sorted.
func Names() []string {
	var out []string
	for _, p := range All() {
		out = append(out, p.Name)
	}
	sort.Strings(out)
	return out
}

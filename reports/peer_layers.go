package reports

import (
	"strings"

	"github.com/outboxchaos/outboxchaos/history"
)

// Layers is where one run's duplicates were stopped, for a relay with
// several layers of defence (the JetStream system's: the row lock, the broker's dedup
// by message id, the consumer's processed table), read from the evidence
// each layer leaves in the history — never from what the design intends:
//
//   - Relays and Republished: relay processes that ran (each logs one
//     "start"; a restart is a new process), and message ids relays
//     published more than once (whatever each attempt's outcome). Relays taking rows with FOR UPDATE SKIP LOCKED
//     and holding the lock to the commit publish an id again only after
//     the first lost its transaction (a crash, a failed publish): with
//     several relays and no fault, zero means the row lock kept them
//     apart.
//   - BrokerDedup: ids whose republish the broker acked as a duplicate
//     (the relay's "publish" event with duplicate=true: JetStream's
//     PubAck.Duplicate) — not stored, never delivered again.
//   - StoredAgain: ids the broker acked as new more than once: a republish
//     past its duplicate window.
//   - Copies: ids delivered to the consumer more than once (stored again,
//     or redelivered because an ack was lost).
//   - ConsumerStopped: ids the consumer found in its processed table
//     ("already-processed") and acked without a send.
//   - Through: ids that reached a handset more than once (the verdict's
//     duplicated): what no layer stopped.
type Layers struct {
	Relays          int `json:"relays"`
	Republished     int `json:"republished"`
	BrokerDedup     int `json:"broker_dedup"`
	StoredAgain     int `json:"stored_again"`
	Copies          int `json:"copies"`
	ConsumerStopped int `json:"consumer_stopped"`
	Through         int `json:"through"`
}

// AlreadyProcessed is the event a consumer logs for a copy its processed
// table already holds (peers/jetstream).
const AlreadyProcessed = "already-processed"

// NewLayers reads the layers' evidence from a run's history; duplicated is
// the verdict's count of messages at a handset twice.
func NewLayers(h []history.Event, copies, duplicated int) *Layers {
	l := &Layers{Copies: copies, Through: duplicated}
	attempts := map[string]int{}
	fresh, dedup, stopped := map[string]int{}, map[string]bool{}, map[string]bool{}
	for _, e := range h {
		mid := e.Str(history.KeyMessageID)
		switch {
		case e.Name == history.Start && strings.HasPrefix(e.Pod, "relay-"):
			l.Relays++
		case e.Name == history.Publish && strings.HasPrefix(e.Pod, "relay-"):
			attempts[mid]++
			if e.Str(history.KeyOutcome) != history.OutcomeConfirmed {
				continue
			}
			if d, ok := e.Bool("duplicate"); ok && d {
				dedup[mid] = true
			} else {
				fresh[mid]++
			}
		case e.Name == AlreadyProcessed:
			stopped[mid] = true
		}
	}
	for _, n := range attempts {
		if n > 1 {
			l.Republished++
		}
	}
	for _, n := range fresh {
		if n > 1 {
			l.StoredAgain++
		}
	}
	l.BrokerDedup, l.ConsumerStopped = len(dedup), len(stopped)
	return l
}

// writeLayers renders, for every implementation that declares JetStream,
// which layer stopped each duplicate in each case it ran.
func (p Peers) writeLayers(f func(string, ...any)) {
	for _, im := range p.Impls {
		if im.Features.JetStream == nil {
			continue
		}
		f("\n## Which layer stopped each duplicate: %s\n\n", im.Name)
		f("Read from each run's evidence, not from the design: **relay processes** that ran (a restart is a new one) and **republished** ids relays published more than once, whatever each attempt's outcome (with several relays and no fault, 0 means the row lock — `FOR UPDATE SKIP LOCKED` held to the commit — kept them apart; after a relay lost its transaction the next one republishes) / ")
		f("**broker dedup**: ids whose republish JetStream acked as a duplicate (`PubAck.Duplicate`, the relay's `publish` event with `duplicate=true`): not stored, never delivered again / ")
		f("**stored again**: ids JetStream acked as new twice (a republish past its duplicate window) / ")
		f("**copies at the consumer**: ids delivered more than once (stored again, or redelivered after a lost ack) / ")
		f("**consumer idempotency**: ids the consumer found in its processed table (`already-processed`) and acked without a send / ")
		f("**through**: ids that reached a handset twice — what no layer stopped.\n\n")
		f("| case | relay processes | republished | broker dedup | stored again | copies at the consumer | consumer idempotency | through |\n|---|---|---|---|---|---|---|---|\n")
		for _, s := range p.Cases {
			c, ok := p.cell(im.Name, s.Name)
			if !ok || c.NA != "" || c.Layers == nil {
				continue
			}
			l := c.Layers
			f("| `%s` | %d | %d | %d | %d | %d | %d | %d |\n", s.Name, l.Relays, l.Republished, l.BrokerDedup, l.StoredAgain, l.Copies, l.ConsumerStopped, l.Through)
		}
	}
}

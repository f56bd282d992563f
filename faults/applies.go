package faults

import (
	"fmt"
	"strings"

	"github.com/outboxchaos/outboxchaos/rig"
)

// Relay is what a fault needs to know of the relay under test to say
// whether it can act on it: what the relay publishes to, how, and which
// points it and its consumer declare. A relay we did not write declares
// these facts (peers.Features); ours has them all.
type Relay struct {
	Name string
	// Broker: it publishes to RabbitMQ; JetStream: to JetStream.
	Broker, JetStream bool
	// Consumer: it brings its own consumer in place of our worker.
	Consumer bool
	// NoConfirms: it publishes without waiting for confirms.
	NoConfirms bool
	// ChannelPerPublish: it opens a channel for each publish and waits
	// for RabbitMQ's answer first.
	ChannelPerPublish bool
	// RelayPoint and WorkerPoint report whether the relay, and the
	// consumer that reads its messages, declare a kill-point.
	RelayPoint, WorkerPoint func(point string) bool
}

// Applier is a fault that acts only on some relays. Applies says why it
// cannot act on r ("" when it can); inPlace is true when the fault is put
// in place for the rest of the run rather than held for a window.
type Applier interface {
	Applies(r Relay, inPlace bool) string
}

// Applies reports whether the fault s describes can act on r and, when it
// cannot, why. A spec that does not build is no fault of r's: Build says
// what is wrong with it.
func Applies(s Spec, r Relay, inPlace bool) (bool, string) {
	f, err := s.Build()
	if err != nil {
		return true, ""
	}
	if a, ok := f.(Applier); ok {
		if why := a.Applies(r, inPlace); why != "" {
			return false, why
		}
	}
	return true, ""
}

// NodeNATS is the node name the infrastructure faults use for a run's
// own nats-server.
const NodeNATS = "nats"

// pointApplies: a kill-point or pause-point in the worker needs a consumer
// that declares it; one elsewhere needs the relay to declare it.
func pointApplies(kind, point string, r Relay) string {
	switch {
	case strings.HasPrefix(point, "worker."):
		switch {
		case r.WorkerPoint != nil && r.WorkerPoint(point):
			return ""
		case r.Consumer:
			return fmt.Sprintf("%s %s: %s's own consumer declares no such point", kind, point, r.Name)
		default:
			return fmt.Sprintf("%s %s: no consumer reads %s's messages (it publishes nothing to RabbitMQ, where our worker reads, and brings no consumer)", kind, point, r.Name)
		}
	case r.RelayPoint == nil || !r.RelayPoint(point):
		return fmt.Sprintf("%s %s: %s declares no such point in its relay", kind, point, r.Name)
	}
	return ""
}

// Applies: the relay (or the consumer reading its messages) declares the
// point.
func (k *Killpoint) Applies(r Relay, _ bool) string { return pointApplies(KindKillPoint, k.Point, r) }

// Applies: the relay (or the consumer reading its messages) declares the
// point.
func (p *Pausepoint) Applies(r Relay, _ bool) string {
	return pointApplies(KindPausePoint, p.Point, r)
}

// Applies: the relay publishes to RabbitMQ.
func (*Unbind) Applies(r Relay, _ bool) string {
	if !r.Broker {
		return fmt.Sprintf("unbinds RabbitMQ's main queue, and %s publishes nothing to RabbitMQ", r.Name)
	}
	return ""
}

// linkApplies: a fault on the relay's RabbitMQ link needs a relay that
// publishes to RabbitMQ, one on a JetStream link a relay that publishes
// there.
func linkApplies(link string, r Relay) string {
	switch {
	case strings.HasPrefix(link, "rabbitmq-relay") && !r.Broker:
		return fmt.Sprintf("faults the relay's RabbitMQ link, and %s publishes nothing to RabbitMQ", r.Name)
	case strings.HasPrefix(link, "nats-") && !r.JetStream:
		return fmt.Sprintf("faults JetStream (%s), and %s publishes nothing to JetStream", link, r.Name)
	}
	return ""
}

// Applies: see linkApplies.
func (l *LinkDown) Applies(r Relay, _ bool) string { return linkApplies(l.Link, r) }

// Applies: see linkApplies.
func (l *LinkStall) Applies(r Relay, _ bool) string { return linkApplies(l.Link, r) }

// Applies: see linkApplies; and what RabbitMQ sends the relay, held back,
// is its confirms, which a relay without confirms never waits for, and
// the answer to the channel a relay opening one per publish waits for
// before it can publish at all.
func (l *LinkLatency) Applies(r Relay, inPlace bool) string {
	if why := linkApplies(l.Link, r); why != "" {
		return why
	}
	if !strings.HasPrefix(l.Link, "rabbitmq-relay") || l.Direction != rig.Downstream {
		return ""
	}
	switch {
	case inPlace && r.ChannelPerPublish:
		return fmt.Sprintf("holds back what RabbitMQ sends the relay until one of its messages reaches a handset, and %s opens a channel for each publish and waits for RabbitMQ's answer first: it cannot publish while the answer is held", r.Name)
	case r.NoConfirms:
		return fmt.Sprintf("delays what RabbitMQ sends the relay (its confirms), and %s publishes without confirms: nothing it waits for comes back", r.Name)
	}
	return ""
}

// nodeApplies: a fault on the run's nats-server needs a relay that
// publishes to JetStream.
func nodeApplies(node string, r Relay) string {
	if node == NodeNATS && !r.JetStream {
		return fmt.Sprintf("faults JetStream (%s), and %s publishes nothing to JetStream", node, r.Name)
	}
	return ""
}

// Applies: see nodeApplies.
func (c *NodeCrash) Applies(r Relay, _ bool) string { return nodeApplies(c.Node, r) }

// Applies: see nodeApplies.
func (c *NodeRestart) Applies(r Relay, _ bool) string { return nodeApplies(c.Node, r) }

// Applies: see nodeApplies.
func (c *NodeFreeze) Applies(r Relay, _ bool) string { return nodeApplies(c.Node, r) }

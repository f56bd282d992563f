package run

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	js "github.com/nats-io/nats.go/jetstream"

	"github.com/outboxchaos/outboxchaos/faults"
	"github.com/outboxchaos/outboxchaos/peers"
	"github.com/outboxchaos/outboxchaos/rig"
	"github.com/outboxchaos/outboxchaos/scenarios/scenario"
)

// A relay under test that declares JetStream (peers.Features.JetStream,
// the JetStream design) gets a JetStream of the run's own: a nats-server
// child on a private port with a private store (rig.NATSServer), never
// the machine's shared server. The pods reach it through two Toxiproxy
// links, nats-relay (relays, migrations) and nats-worker (the peer's
// consumer), and the infrastructure faults name it as the node "nats":
// crash (SIGKILL, start on recover), restart (SIGTERM, start on recover),
// freeze (SIGSTOP, SIGCONT on recover).

// startJetStream starts the run's JetStream and its links, if the peer
// under test uses one.
func (e *Env) startJetStream(ctx context.Context) error {
	if e.Peer.Features.JetStream == nil {
		return nil
	}
	s, err := rig.StartNATS(ctx, "", e.TL)
	if err != nil {
		return err
	}
	e.NATS = s
	for _, name := range []string{"nats-relay", "nats-worker"} {
		p, err := e.Net.Proxy(name, s.Addr())
		if err != nil {
			return err
		}
		e.natsLinks = append(e.natsLinks, p)
	}
	e.Logf("harness", "JetStream for %s at %s (links nats-relay, nats-worker)", e.Impl, s.Addr())
	return nil
}

// natsEnv is a pod's JetStream URL: the workers' link for the peer's
// consumer, the relays' for every other role.
func (e *Env) natsEnv(role string) []string {
	if e.NATS == nil {
		return nil
	}
	link := "nats-relay"
	if role == "worker" {
		link = "nats-worker"
	}
	p, err := e.Link(link)
	if err != nil {
		return nil
	}
	return []string{peers.NATSURLEnvVar + "=nats://" + p.Addr()}
}

// natsInfra is the run's infrastructure with its JetStream as node
// "nats"; the other nodes are the run's containers, if it has any.
type natsInfra struct {
	inner faults.NodeControl
	nats  *rig.NATSServer
}

var errNotContainers = errors.New("this run uses the shared Postgres and RabbitMQ, which no fault may crash, pause or restart: " +
	"only its own JetStream (node nats) is the run's")

func (n natsInfra) other() (faults.NodeControl, error) {
	if n.inner == nil {
		return nil, errNotContainers
	}
	return n.inner, nil
}

// Nodes implements faults.NodeControl.
func (n natsInfra) Nodes() []string {
	out := []string{faults.NodeNATS}
	if n.inner != nil {
		out = append(out, n.inner.Nodes()...)
	}
	return out
}

// Crash implements faults.NodeControl.
func (n natsInfra) Crash(ctx context.Context, node string) error {
	if node == faults.NodeNATS {
		return n.nats.Crash()
	}
	in, err := n.other()
	if err != nil {
		return err
	}
	return in.Crash(ctx, node)
}

// Stop implements faults.NodeControl.
func (n natsInfra) Stop(ctx context.Context, node string) error {
	if node == faults.NodeNATS {
		return n.nats.Stop()
	}
	in, err := n.other()
	if err != nil {
		return err
	}
	return in.Stop(ctx, node)
}

// Start implements faults.NodeControl.
func (n natsInfra) Start(ctx context.Context, node string) error {
	if node == faults.NodeNATS {
		return n.nats.Start(ctx)
	}
	in, err := n.other()
	if err != nil {
		return err
	}
	return in.Start(ctx, node)
}

// Pause implements faults.NodeControl.
func (n natsInfra) Pause(ctx context.Context, node string) error {
	if node == faults.NodeNATS {
		return n.nats.Freeze()
	}
	in, err := n.other()
	if err != nil {
		return err
	}
	return in.Pause(ctx, node)
}

// Unpause implements faults.NodeControl.
func (n natsInfra) Unpause(ctx context.Context, node string) error {
	if node == faults.NodeNATS {
		return n.nats.Thaw()
	}
	in, err := n.other()
	if err != nil {
		return err
	}
	return in.Unpause(ctx, node)
}

// QueueLeader implements faults.NodeControl.
func (n natsInfra) QueueLeader(ctx context.Context, queue string) (string, error) {
	in, err := n.other()
	if err != nil {
		return "", err
	}
	return in.QueueLeader(ctx, queue)
}

// probeSeq numbers the duplicate-window probes of this process.
var probeSeq atomic.Int64

// dedupProbe is one dedup_expired wait: a message id published once to
// the peer's probe subject when the wait began, then published again
// under the same id on every look until JetStream stores it again instead
// of answering "duplicate". JetStream forgets ids in the order it saw
// them, so when it forgot the probe's it forgot every id published before
// the wait began: the window has passed for all of them, as the broker
// itself says — no clock of ours is read.
type dedupProbe struct {
	s     js.JetStream
	id    string
	first bool
}

// holdsDedupExpired publishes the probe; it holds once JetStream no longer
// calls a re-publish of it a duplicate. The harness reaches JetStream
// directly, never through the pods' links.
func holdsDedupExpired(ctx context.Context, p *probe, _ *scenario.Cond) (bool, error) {
	e := p.r.e
	f := e.Peer.Features.JetStream
	if e.NATS == nil || f == nil {
		return false, fmt.Errorf("%w: dedup_expired needs a relay under test that uses JetStream", errFailed)
	}
	if p.dedup == nil {
		nc, err := nats.Connect("nats://"+e.NATS.Addr(), nats.Name("outboxchaos-harness"), nats.Timeout(2*time.Second))
		if err != nil {
			return false, fmt.Errorf("harness connection to JetStream: %w", err)
		}
		s, err := js.New(nc)
		if err != nil {
			nc.Close()
			return false, fmt.Errorf("harness JetStream context: %w", err)
		}
		e.mu.Lock()
		e.natsConns = append(e.natsConns, nc)
		e.mu.Unlock()
		p.dedup = &dedupProbe{s: s, id: "outboxchaos-window-probe-" + strconv.FormatInt(probeSeq.Add(1), 10) + "-" + e.SB.Prefix}
	}
	d := p.dedup
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	ack, err := d.s.PublishMsg(pctx, &nats.Msg{Subject: f.ProbeSubject, Data: []byte("window probe"), Header: nats.Header{}}, js.WithMsgID(d.id))
	if err != nil {
		return false, fmt.Errorf("publish the window probe: %w", err)
	}
	if !d.first {
		if ack.Duplicate {
			return false, fmt.Errorf("%w: the window probe's id %s was a duplicate on its first publish", errFailed, d.id)
		}
		d.first = true
		e.Logf("harness", "window probe %s published (stream seq %d)", d.id, ack.Sequence)
		return false, nil
	}
	if ack.Duplicate {
		return false, nil
	}
	e.Logf("harness", "JetStream stored the window probe %s again (seq %d): its duplicate window has passed", d.id, ack.Sequence)
	return true, nil
}

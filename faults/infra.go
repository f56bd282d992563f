package faults

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// NodeControl is a run's own infrastructure, running in containers of its own
// (package infra): the infrastructure faults act on it. Nodes are named
// "postgres", "rabbitmq" (one broker) or "rabbitmq-1" … "rabbitmq-3" (a
// cluster).
type NodeControl interface {
	// Nodes names every node.
	Nodes() []string
	// Crash SIGKILLs the node's main process.
	Crash(ctx context.Context, node string) error
	// Stop stops the node gracefully (SIGTERM).
	Stop(ctx context.Context, node string) error
	// Start starts a crashed or stopped node and waits until it serves.
	Start(ctx context.Context, node string) error
	// Pause freezes the node; Unpause thaws it.
	Pause(ctx context.Context, node string) error
	Unpause(ctx context.Context, node string) error
	// QueueLeader names the node leading a quorum queue.
	QueueLeader(ctx context.Context, queue string) (string, error)
}

// InfraWorld is a World whose Postgres and RabbitMQ are its own
// containers.
type InfraWorld interface {
	World
	// Infra is the run's containers (nil when it has none).
	Infra() NodeControl
	// MainQueue is the run's main queue.
	MainQueue() string
}

// NodeNames are the nodes an infrastructure fault may name: the
// containers', and "nats", the run's own nats-server when its relay under
// test uses JetStream (a child process: crash is SIGKILL, freeze SIGSTOP).
var NodeNames = []string{"postgres", "rabbitmq", "rabbitmq-1", "rabbitmq-2", "rabbitmq-3", NodeNATS}

// errNoInfra: the run shares the machine's services, which no fault may
// crash.
var errNoInfra = errors.New("this run uses the shared services, which no fault may crash, pause or restart: " +
	"infrastructure faults run in the container scenarios (make infra)")

func infraOf(w World) (NodeControl, InfraWorld, error) {
	iw, ok := w.(InfraWorld)
	if !ok || iw.Infra() == nil {
		return nil, nil, errNoInfra
	}
	return iw.Infra(), iw, nil
}

// nodeFault is the common part of the infrastructure faults: which node
// it hit, when, and when the node was back.
type nodeFault struct {
	mu       sync.Mutex
	node     string // the node hit (a leader loss resolves it when injected)
	hit      time.Time
	back     time.Duration
	restored bool
}

func (f *nodeFault) hitAt(node string) {
	f.mu.Lock()
	f.node, f.hit = node, time.Now()
	f.mu.Unlock()
}

// restore runs undo once, if the fault hit, and records how long the node
// was out.
func (f *nodeFault) restore(ctx context.Context, undo func(ctx context.Context, node string) error) error {
	f.mu.Lock()
	node, hit, done := f.node, f.hit, f.restored
	f.mu.Unlock()
	if hit.IsZero() || done {
		return nil
	}
	if err := undo(ctx, node); err != nil {
		return err
	}
	f.mu.Lock()
	f.restored, f.back = true, time.Since(hit)
	f.mu.Unlock()
	return nil
}

// Fired: the fault hit its node; the step's condition says it bit.
func (f *nodeFault) Fired(World) (bool, string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case f.hit.IsZero():
		return false, "never hit its node"
	case !f.restored:
		return true, f.node + " hit, never restored"
	default:
		return true, fmt.Sprintf("%s out for %s", f.node, f.back.Round(time.Millisecond))
	}
}

// PartlyBlind: whether the pipeline met the fault is its step's condition.
func (f *nodeFault) PartlyBlind() {}

// NodeCrash SIGKILLs a node (the postmaster, the broker's Erlang VM) and,
// on recover, starts it again: what persisted survives, nothing else.
type NodeCrash struct {
	Node string
	nodeFault
}

// Family is "crash".
func (c *NodeCrash) Family() string { return KindCrash }

// Target is the node.
func (c *NodeCrash) Target() string { return c.Node }

// Inject kills the node.
func (c *NodeCrash) Inject(ctx context.Context, w World) error {
	in, _, err := infraOf(w)
	if err != nil {
		return err
	}
	if err := in.Crash(ctx, c.Node); err != nil {
		return err
	}
	c.hitAt(c.Node)
	return nil
}

// Recover starts the node again and waits until it serves.
func (c *NodeCrash) Recover(ctx context.Context, w World) error {
	in, _, err := infraOf(w)
	if err != nil {
		return nil
	}
	return c.restore(ctx, in.Start)
}

func (c *NodeCrash) String() string { return "crash " + c.Node + " (SIGKILL; restart on recover)" }

// NodeRestart stops a node gracefully (SIGTERM: the broker closes its
// connections, Postgres shuts down cleanly) and starts it on recover.
type NodeRestart struct {
	Node string
	nodeFault
}

// Family is "restart".
func (r *NodeRestart) Family() string { return KindRestart }

// Target is the node.
func (r *NodeRestart) Target() string { return r.Node }

// Inject stops the node.
func (r *NodeRestart) Inject(ctx context.Context, w World) error {
	in, _, err := infraOf(w)
	if err != nil {
		return err
	}
	if err := in.Stop(ctx, r.Node); err != nil {
		return err
	}
	r.hitAt(r.Node)
	return nil
}

// Recover starts the node and waits until it serves.
func (r *NodeRestart) Recover(ctx context.Context, w World) error {
	in, _, err := infraOf(w)
	if err != nil {
		return nil
	}
	return r.restore(ctx, in.Start)
}

func (r *NodeRestart) String() string {
	return "graceful restart of " + r.Node + " (SIGTERM; start on recover)"
}

// NodeFreeze pauses every process of a node: connections stay open and
// its port accepts new ones, but nothing answers until recover thaws it.
type NodeFreeze struct {
	Node string
	nodeFault
}

// Family is "freeze".
func (f *NodeFreeze) Family() string { return KindFreeze }

// Target is the node.
func (f *NodeFreeze) Target() string { return f.Node }

// Inject freezes the node.
func (f *NodeFreeze) Inject(ctx context.Context, w World) error {
	in, _, err := infraOf(w)
	if err != nil {
		return err
	}
	if err := in.Pause(ctx, f.Node); err != nil {
		return err
	}
	f.hitAt(f.Node)
	return nil
}

// Recover thaws the node.
func (f *NodeFreeze) Recover(ctx context.Context, w World) error {
	in, _, err := infraOf(w)
	if err != nil {
		return nil
	}
	return f.restore(ctx, in.Unpause)
}

func (f *NodeFreeze) String() string {
	return "freeze " + f.Node + " (docker pause, or SIGSTOP for a child process; thaw on recover)"
}

// LeaderLoss SIGKILLs the node leading the run's main quorum queue; recover
// is the node's return: it starts again and rejoins the cluster.
type LeaderLoss struct {
	nodeFault
}

// Family is "leader-loss".
func (l *LeaderLoss) Family() string { return KindLeaderLoss }

// Target is the main queue's leader, once known.
func (l *LeaderLoss) Target() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.node == "" {
		return "main queue leader"
	}
	return l.node
}

// Inject finds the leader and kills it.
func (l *LeaderLoss) Inject(ctx context.Context, w World) error {
	in, iw, err := infraOf(w)
	if err != nil {
		return err
	}
	leader, err := in.QueueLeader(ctx, iw.MainQueue())
	if err != nil {
		return err
	}
	if err := in.Crash(ctx, leader); err != nil {
		return err
	}
	l.hitAt(leader)
	w.Logf("faults", "killed %s, the leader of %s", leader, iw.MainQueue())
	return nil
}

// Recover brings the node back.
func (l *LeaderLoss) Recover(ctx context.Context, w World) error {
	in, _, err := infraOf(w)
	if err != nil {
		return nil
	}
	return l.restore(ctx, in.Start)
}

func (l *LeaderLoss) String() string {
	return "leader loss: SIGKILL the main queue's leader (" + l.Target() + "); it returns on recover"
}

package infra

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/testcontainers/testcontainers-go"
)

// Options say what to start and how long to wait.
type Options struct {
	// Postgres starts a PostgreSQL container.
	Postgres bool
	// RabbitNodes is 0 (no broker), 1 (one node) or 3 (a cluster sharing
	// a private epmd).
	RabbitNodes int
	// Ready bounds each wait for a container to serve, at start and after
	// a restart (default 2 minutes: a loaded machine's cold start).
	Ready time.Duration
	// StopGrace is how long a graceful stop waits before SIGKILL
	// (default 30 s).
	StopGrace time.Duration
	// Log receives one line per container action; nil discards them.
	Log *slog.Logger
}

// Containers are one run's containers: its own Postgres and RabbitMQ
// (one broker or a cluster), which the infrastructure faults act on.
type Containers struct {
	o     Options
	tag   string // unique part of container and node names
	nodes []*Node
	epmd  testcontainers.Container
	cli   *testcontainers.DockerClient

	mu     sync.Mutex
	closed bool
}

// Node is one service container.
type Node struct {
	Name     string // "postgres", "rabbitmq" or "rabbitmq-1" … "rabbitmq-3"
	URL      string // how a client reaches it (127.0.0.1 and its port)
	Erlang   string // a RabbitMQ node's Erlang node name
	Started  time.Duration
	ctr      testcontainers.Container
	ready    func(ctx context.Context) error
	isBroker bool
}

var ryukOnce sync.Once

// Start starts what o asks for and waits until each serves. On failure it
// removes whatever it started.
func Start(ctx context.Context, o Options) (in *Containers, err error) {
	if o.Ready <= 0 {
		o.Ready = 2 * time.Minute
	}
	if o.StopGrace <= 0 {
		o.StopGrace = 30 * time.Second
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	in = &Containers{o: o, tag: randTag()}
	defer func() {
		if err != nil {
			err = errors.Join(err, in.Close(context.WithoutCancel(ctx)))
			in = nil
		}
	}()
	if in.cli, err = dockerClient(ctx); err != nil {
		return in, err
	}
	var wg sync.WaitGroup
	var pgErr, rabbitErr error
	if o.Postgres {
		wg.Go(func() { pgErr = in.startPostgres(ctx) })
	}
	switch o.RabbitNodes {
	case 0:
	case 1:
		wg.Go(func() { rabbitErr = in.startRabbit(ctx) })
	case 3:
		wg.Go(func() { rabbitErr = in.startCluster(ctx, 3) })
	default:
		return in, fmt.Errorf("rabbit nodes %d: want 0, 1 or 3", o.RabbitNodes)
	}
	wg.Wait()
	return in, errors.Join(pgErr, rabbitErr)
}

// dockerClient returns testcontainers' Docker client, or an error saying
// that no engine answers.
func dockerClient(ctx context.Context) (cli *testcontainers.DockerClient, err error) {
	ryukOnce.Do(func() {
		// Ryuk is an image of its own (no registry here): the harness
		// removes its containers itself. testcontainers reads this once,
		// on its first call, so it is set before any.
		if os.Getenv("TESTCONTAINERS_RYUK_DISABLED") == "" {
			_ = os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
		}
	})
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("no Docker engine found (testcontainers: %v); start one (bash .ci/images/docker-up), or set DOCKER_HOST", r)
		}
	}()
	cli, err = testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		return nil, fmt.Errorf("no Docker engine answers: %w; start one (bash .ci/images/docker-up), or set DOCKER_HOST", err)
	}
	return cli, nil
}

// Available reports why no Docker engine can be used, or nil.
func Available(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	cli, err := dockerClient(ctx)
	if err != nil {
		return err
	}
	defer cli.Close()
	if _, err := cli.Ping(ctx); err != nil {
		return fmt.Errorf("the Docker engine does not answer: %w", err)
	}
	return nil
}

// run creates and starts one host-network container; it does not wait for
// the service (ready does).
func (in *Containers) run(ctx context.Context, name, image string, cmd []string, env map[string]string) (testcontainers.Container, error) {
	req := testcontainers.GenericContainerRequest{
		ContainerRequest: testcontainers.ContainerRequest{
			Name: "outboxchaos-" + in.tag + "-" + name, Image: image, Cmd: cmd, Env: env,
			HostConfigModifier: func(hc *container.HostConfig) { hc.NetworkMode = "host" },
			ConfigModifier: func(c *container.Config) {
				if name == "postgres" {
					// A graceful stop is Postgres's fast shutdown (SIGINT),
					// as in the official image: SIGTERM's smart shutdown
					// would wait for every client to leave.
					c.StopSignal = "SIGINT"
				}
			},
			Labels: map[string]string{"outboxchaos": in.tag, "outboxchaos.run": os.Getenv(EnvRunID)},
		},
		Started: true,
	}
	ctr, err := testcontainers.GenericContainer(ctx, req)
	if ctr != nil {
		in.mu.Lock()
		if in.closed {
			in.mu.Unlock()
			_ = testcontainers.TerminateContainer(ctr)
			return nil, errors.New("infrastructure closed while starting")
		}
		in.mu.Unlock()
	}
	if err != nil {
		if ctr != nil {
			_ = testcontainers.TerminateContainer(ctr)
		}
		return nil, fmt.Errorf("start container %s (%s): %w", name, image, err)
	}
	return ctr, nil
}

func (in *Containers) add(n *Node) {
	in.mu.Lock()
	in.nodes = append(in.nodes, n)
	in.mu.Unlock()
}

// Nodes names every node, Postgres first, then the brokers in order.
func (in *Containers) Nodes() []string {
	in.mu.Lock()
	defer in.mu.Unlock()
	var out []string
	for _, n := range in.nodes {
		out = append(out, n.Name)
	}
	slices.SortFunc(out, func(a, b string) int {
		return strings.Compare(strings.Replace(a, "postgres", "0", 1), strings.Replace(b, "postgres", "0", 1))
	})
	return out
}

// Node returns the node called name.
func (in *Containers) Node(name string) (*Node, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	var names []string
	for _, n := range in.nodes {
		if n.Name == name {
			return n, nil
		}
		names = append(names, n.Name)
	}
	return nil, fmt.Errorf("no node %q (nodes: %s)", name, strings.Join(names, ", "))
}

// PGURL is the Postgres URL ("" without Postgres).
func (in *Containers) PGURL() string {
	if n, err := in.Node("postgres"); err == nil {
		return n.URL
	}
	return ""
}

// AMQPURL is every broker node's URL, separated by commas (the pipeline's
// amqp-url setting for a cluster).
func (in *Containers) AMQPURL() string {
	in.mu.Lock()
	defer in.mu.Unlock()
	// In node order (rabbitmq-1 first), whatever order they booted in: a
	// client dials the first, so the queues it declares lead there.
	var brokers []*Node
	for _, n := range in.nodes {
		if n.isBroker {
			brokers = append(brokers, n)
		}
	}
	slices.SortFunc(brokers, func(a, b *Node) int { return strings.Compare(a.Name, b.Name) })
	var out []string
	for _, n := range brokers {
		out = append(out, n.URL)
	}
	return strings.Join(out, ",")
}

// StartTimes says how long each container took from create to serving.
func (in *Containers) StartTimes() map[string]time.Duration {
	in.mu.Lock()
	defer in.mu.Unlock()
	out := map[string]time.Duration{}
	for _, n := range in.nodes {
		out[n.Name] = n.Started
	}
	return out
}

// Crash SIGKILLs the node's main process (the container's PID 1: the
// postmaster, the Erlang VM): no shutdown, no flush.
func (in *Containers) Crash(ctx context.Context, name string) error {
	n, err := in.Node(name)
	if err != nil {
		return err
	}
	if err := in.cli.ContainerKill(ctx, n.ctr.GetContainerID(), "KILL"); err != nil {
		return fmt.Errorf("SIGKILL %s: %w", name, err)
	}
	// Wait until the engine saw it die, so a Start that follows starts it.
	if err := in.waitStopped(ctx, n); err != nil {
		return err
	}
	in.o.Log.Info("node crashed (SIGKILL)", "node", name)
	return nil
}

// Stop stops the node gracefully (SIGTERM, SIGKILL after the grace).
func (in *Containers) Stop(ctx context.Context, name string) error {
	n, err := in.Node(name)
	if err != nil {
		return err
	}
	grace := in.o.StopGrace
	if err := n.ctr.Stop(ctx, &grace); err != nil {
		return fmt.Errorf("stop %s: %w", name, err)
	}
	in.o.Log.Info("node stopped (SIGTERM)", "node", name)
	return nil
}

// Start starts a stopped or crashed node again and waits until it serves.
func (in *Containers) Start(ctx context.Context, name string) error {
	n, err := in.Node(name)
	if err != nil {
		return err
	}
	t0 := time.Now()
	if err := n.ctr.Start(ctx); err != nil {
		return fmt.Errorf("start %s again: %w", name, err)
	}
	if err := in.waitReady(ctx, n); err != nil {
		return err
	}
	in.o.Log.Info("node back", "node", name, "took", time.Since(t0).Round(time.Millisecond).String())
	return nil
}

// Pause freezes every process of the node (the cgroup freezer): its ports
// still accept connections in the kernel, nothing answers.
func (in *Containers) Pause(ctx context.Context, name string) error {
	n, err := in.Node(name)
	if err != nil {
		return err
	}
	if err := in.cli.ContainerPause(ctx, n.ctr.GetContainerID()); err != nil {
		return fmt.Errorf("pause %s: %w", name, err)
	}
	in.o.Log.Info("node frozen", "node", name)
	return nil
}

// Unpause thaws a frozen node.
func (in *Containers) Unpause(ctx context.Context, name string) error {
	n, err := in.Node(name)
	if err != nil {
		return err
	}
	if err := in.cli.ContainerUnpause(ctx, n.ctr.GetContainerID()); err != nil {
		return fmt.Errorf("unpause %s: %w", name, err)
	}
	in.o.Log.Info("node thawed", "node", name)
	return nil
}

// Running reports whether the node's container runs (paused counts).
func (in *Containers) Running(ctx context.Context, name string) (bool, error) {
	n, err := in.Node(name)
	if err != nil {
		return false, err
	}
	st, err := n.ctr.State(ctx)
	if err != nil {
		return false, fmt.Errorf("state of %s: %w", name, err)
	}
	return st.Running, nil
}

func (in *Containers) waitStopped(ctx context.Context, n *Node) error {
	ctx, cancel := context.WithTimeout(ctx, in.o.Ready)
	defer cancel()
	for {
		st, err := n.ctr.State(ctx)
		if err == nil && !st.Running {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s still runs after SIGKILL: %w", n.Name, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// waitReady polls the node's own readiness check until it passes or the
// Ready bound is reached; the error carries the container's last log lines.
func (in *Containers) waitReady(ctx context.Context, n *Node) error {
	ctx, cancel := context.WithTimeout(ctx, in.o.Ready)
	defer cancel()
	var last error
	for {
		if last = n.ready(ctx); last == nil {
			return nil
		}
		if st, err := n.ctr.State(ctx); err == nil && !st.Running && !st.Paused {
			return fmt.Errorf("%s exited (code %d) before serving: %w\n%s", n.Name, st.ExitCode, last, in.tail(n))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not serving within %s: %w\n%s", n.Name, in.o.Ready, last, in.tail(n))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// tail is the last lines of a node's log, for errors.
func (in *Containers) tail(n *Node) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rc, err := n.ctr.Logs(ctx)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	defer rc.Close()
	b, _ := io.ReadAll(rc)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return "  " + strings.Join(lines, "\n  ")
}

// Close removes every container, the frozen and the crashed too. Safe to
// call twice.
func (in *Containers) Close(ctx context.Context) error {
	in.mu.Lock()
	if in.closed {
		in.mu.Unlock()
		return nil
	}
	in.closed = true
	nodes := in.nodes
	epmd := in.epmd
	in.mu.Unlock()
	var errs []error
	for _, n := range nodes {
		// A frozen container cannot be stopped: thaw it first.
		if st, err := n.ctr.State(ctx); err == nil && st.Paused {
			_ = in.cli.ContainerUnpause(ctx, n.ctr.GetContainerID())
		}
		if err := testcontainers.TerminateContainer(n.ctr); err != nil {
			errs = append(errs, fmt.Errorf("remove %s: %w", n.Name, err))
		}
	}
	if epmd != nil {
		if err := testcontainers.TerminateContainer(epmd); err != nil {
			errs = append(errs, fmt.Errorf("remove epmd: %w", err))
		}
	}
	if in.cli != nil {
		_ = in.cli.Close()
	}
	return errors.Join(errs...)
}

package run

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/outboxchaos/outboxchaos/checker"
	"github.com/outboxchaos/outboxchaos/peers"
	"github.com/outboxchaos/outboxchaos/system/app"
	"github.com/outboxchaos/outboxchaos/system/broker"
)

// The relay under test: with Options.Impl naming a peer
// of the registry (peers.Lookup), the relay pods run the peer — a seam
// binary's relay (peers/seam.Main), whose job and migrate pods also
// enqueue into and create its own outbox, or a relay given as a command
// line (the process contract, docs/relay-contract.md), whose jobs are
// ours — and the snapshot folds the peer's view of each message into the
// outbox rows the checker reads.

// peerOf resolves o.Impl to its registry entry and the binary its pods run
// ("" for ours and for a command-line relay).
func peerOf(o Options) (peers.Peer, string, error) {
	p, err := peers.Lookup(o.Impl)
	if err != nil || p.Binary == "" {
		return p, "", err
	}
	dir := o.PeerDir
	if dir == "" {
		dir = filepath.Dir(o.Bin)
	}
	bin := filepath.Join(dir, p.Binary)
	if _, err := os.Stat(bin); err != nil {
		return p, "", fmt.Errorf("relay under test %s: %w (make peer-bins builds it)", o.Impl, err)
	}
	return p, bin, nil
}

// peer reports whether a peer's relay is under test.
func (e *Env) peer() bool { return e.PeerBin != "" || len(e.Peer.Command) > 0 }

// podBinary returns the binary and arguments of a pod of role: the peer's
// for its relay, its job (enqueue into its outbox too), its migrate and,
// for a peer with a consumer of its own, its worker (consume);
// a command-line relay's command for the relay.
func (e *Env) podBinary(role string, args []string) (string, []string) {
	if c := e.Peer.Command; len(c) > 0 && role == "relay" {
		return c[0], append([]string(nil), c[1:]...)
	}
	if e.PeerBin == "" {
		return e.ourBin, args
	}
	switch role {
	case "relay", "job", "migrate":
		if role == "relay" {
			args = []string{"relay"}
		}
		return e.PeerBin, append(args, "--impl", e.Impl)
	case "worker":
		if e.Peer.Features.Consumer {
			return e.PeerBin, []string{"consume", "--impl", e.Impl}
		}
	}
	return e.ourBin, args
}

// podBinSuffix names the pod build of a binary beside it: bin/outboxchaos
// and bin/outboxchaos-pod (make build), bin/outboxchaos-cover and
// bin/outboxchaos-cover-pod (make cover-bin).
const podBinSuffix = "-pod"

// pipelineBin is the binary our pods run: bin's pod build beside it, built
// with the tag pod (the pipeline's commands alone, so it starts in about
// half the CPU), when it is there and not older than bin; else bin itself,
// which has every command.
func pipelineBin(bin string) string {
	full, err := os.Stat(bin)
	if err != nil {
		return bin
	}
	pod, err := os.Stat(bin + podBinSuffix)
	if err != nil || pod.IsDir() || pod.ModTime().Before(full.ModTime()) {
		return bin
	}
	return bin + podBinSuffix
}

// peerName is the relay under test when it is not ours, "" for ours.
func (e *Env) peerName() string {
	if !e.peer() {
		return ""
	}
	return e.Impl
}

// migratePeer declares the broker's topology for a peer that publishes to
// RabbitMQ, then creates the peer's tables (and ours again, harmlessly),
// or runs a command-line relay's own migration.
func (e *Env) migratePeer(ctx context.Context) error {
	if !e.peer() {
		return nil
	}
	// The harness declares the broker's topology before the relay under
	// test starts: a relay that publishes before any worker ran must find
	// the main queue bound (and bounded, where the run bounds it), as ours
	// does by declaring it itself.
	if e.Peer.Features.Broker {
		c := e.Cfg
		c.AMQPURL = e.SB.AMQPURL
		if err := app.DeclareTopology(c); err != nil {
			return fmt.Errorf("declare the topology before the relay under test starts: %w", err)
		}
	}
	if m := e.Peer.Migrate; len(m) > 0 {
		_, err := e.Run(ctx, "migrate", podSpec{command: m})
		return err
	}
	if e.PeerBin == "" {
		return nil
	}
	_, err := e.Run(ctx, "migrate", podSpec{})
	return err
}

// foldPeer overwrites the status of each outbox row our relay never touched
// (PENDING) with the peer's view of its message: PUBLISHED (done),
// PENDING (still owed) or FAILED (given up). A peer that marks our outbox
// itself has nothing to fold.
func (e *Env) foldPeer(ctx context.Context, rows []checker.OutboxRow) error {
	if !e.peer() {
		return nil
	}
	st, err := peers.Status(ctx, e.Pool, e.Peer)
	if err != nil {
		return err
	}
	for i := range rows {
		if s, ok := st[rows[i].ID]; ok && rows[i].Status == "PENDING" {
			rows[i].Status = s
			if s == peers.Failed {
				rows[i].Reason = e.Impl + " gave up"
			}
		}
	}
	return nil
}

// contractEnv is what the process contract adds to a command-line
// relay's environment beyond OUTBOXCHAOS_PG_URL, OUTBOXCHAOS_AMQP_URL and
// OUTBOXCHAOS_INSTANCE (which every pod gets): the exchange and routing
// key to publish to, so a relay need not know our naming.
func (e *Env) contractEnv(role string) []string {
	if len(e.Peer.Command) == 0 || (role != "relay" && role != "migrate") {
		return nil
	}
	return []string{"OUTBOXCHAOS_EXCHANGE=" + broker.NamesFor(e.SB.Prefix).Exchange, "OUTBOXCHAOS_ROUTING_KEY=" + broker.KeySend}
}

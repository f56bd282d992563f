package scenarios

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/outboxchaos/outboxchaos/checker"
	"github.com/outboxchaos/outboxchaos/peers"
)

// The relay under test (issue 12): with Options.Impl naming a peer, the
// relay and job pods run the peer's binary (peers/seam.Main), the runner
// also migrates the peer's tables, and the snapshot folds the peer's view
// of each message into the outbox rows the checker reads.

// peerBinary resolves o.Impl to its binary ("" for ours).
func peerBinary(o Options) (string, string, error) {
	if o.Impl == "" || o.Impl == peers.Ours {
		return "", "", nil
	}
	name, err := peers.Binary(o.Impl)
	if err != nil {
		return "", "", err
	}
	dir := o.PeerDir
	if dir == "" {
		dir = filepath.Dir(o.Bin)
	}
	bin := filepath.Join(dir, name)
	if _, err := os.Stat(bin); err != nil {
		return "", "", fmt.Errorf("relay under test %s: %w (make peer-bins builds it)", o.Impl, err)
	}
	return o.Impl, bin, nil
}

// peer reports whether a peer's relay is under test.
func (e *Env) peer() bool { return e.PeerBin != "" }

// podBinary returns the binary and arguments of a pod of role: the peer's
// for its relay, its job (enqueue into its outbox too) and its migrate.
func (e *Env) podBinary(role string, args []string) (string, []string) {
	if !e.peer() {
		return e.Bin, args
	}
	switch role {
	case "relay", "job", "migrate":
		if role == "relay" {
			args = []string{"relay"}
		}
		return e.PeerBin, append(args, "--impl", e.Impl)
	}
	return e.Bin, args
}

// migratePeer creates the peer's tables (and ours again, harmlessly).
func (e *Env) migratePeer(ctx context.Context) error {
	if !e.peer() {
		return nil
	}
	_, err := e.Run(ctx, "migrate", podSpec{})
	return err
}

// foldPeer overwrites the status of each outbox row our relay never touched
// (PENDING) with the peer's view of its message: PUBLISHED (done),
// PENDING (still owed) or FAILED (given up).
func (e *Env) foldPeer(ctx context.Context, rows []checker.OutboxRow) error {
	if !e.peer() {
		return nil
	}
	st, err := peers.Status(ctx, e.Pool, e.Impl)
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

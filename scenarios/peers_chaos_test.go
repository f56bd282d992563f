//go:build chaos

package scenarios_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/outboxchaos/outboxchaos/peers"
	"github.com/outboxchaos/outboxchaos/scenarios"
	"github.com/outboxchaos/outboxchaos/system/testenv"
)

// buildPeers builds the peer binaries next to bin (Makefile target
// peer-bins does the same for make peers).
func buildPeers(t *testing.T) {
	t.Helper()
	dir := filepath.Dir(bin)
	builds := []struct {
		wd   string
		args []string
	}{
		{"..", []string{"build", "-o", filepath.Join(dir, "peer-watermill"), "./peers/cmd/peer-watermill"}},
		{"..", []string{"build", "-o", filepath.Join(dir, "peer-sendrecord"), "./peers/cmd/peer-sendrecord"}},
		{"..", []string{"build", "-o", filepath.Join(dir, "peer-jetstream"), "./peers/cmd/peer-jetstream"}},
		{"../peers/river", []string{"build", "-o", filepath.Join(dir, "peer-river0512"), "."}},
		{"../peers/river", []string{"build", "-modfile=go047.mod", "-ldflags", "-X main.version=v0.47.0 -X main.name=river047",
			"-o", filepath.Join(dir, "peer-river047"), "."}},
	}
	for _, b := range builds {
		cmd := exec.Command("go", b.args...)
		cmd.Dir = b.wd
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("go %s (in %s): %v", strings.Join(b.args, " "), b.wd, err)
		}
	}
	addNodeRelay.Do(func() { nodeErr = registerNodeRelay() })
	if nodeErr != nil {
		t.Fatal(nodeErr)
	}
}

var (
	addNodeRelay sync.Once
	nodeErr      error
)

// registerNodeRelay installs the Node.js relay's packages from its lock
// file (as make peer-bins and .ci/run do) and registers it as
// "node-relay" through the process contract, as outboxchaos peers
// --relay-cmd does.
func registerNodeRelay() error {
	dir, err := filepath.Abs("../peers/node-relay")
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules")); err != nil {
		cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund", "--loglevel=error")
		cmd.Dir = dir
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("npm ci in %s: %w", dir, err)
		}
	}
	relay := filepath.Join(dir, "relay.js")
	for _, r := range []struct{ name, flaw string }{
		{"node-relay", ""}, {"node-relay-ignores-returns", "ignore-returns"}, {"node-relay-nack-as-success", "nack-as-success"},
	} {
		command := []string{"node", relay}
		if r.flaw != "" {
			command = append(command, "--flaw="+r.flaw)
		}
		p, err := peers.Describe(context.Background(), r.name, command)
		if err != nil {
			return err
		}
		if err := peers.Add(p); err != nil {
			return err
		}
	}
	return nil
}

// TestPeers is CI's sample of make peers: a crash before
// the "done" write against Watermill's queue schema with confirms, against
// the Node.js relay judged through the process contract, and against the
// send-then-record design the outbox replaced — which must send one
// message twice, or the harness could not show why the outbox exists;
// the JetStream system with a republish forced past the broker's
// duplicate window, which only its consumer's table may stop (the case's
// rule: an already-processed event); and River's rescuer race against
// both versions — v0.51.2 must keep the rule that a completed job is not
// published again, v0.47.0 (before the fix of River #1302) must break it,
// or the harness could not tell them apart. The Node.js relay also meets an
// unroutable publish and a full queue, which it must survive, and so must
// each of its two flawed builds fail: one that ignores returns loses the
// returned message silently, one that takes a nack for a confirm loses
// the refused ones.
func TestPeers(t *testing.T) {
	testenv.Require(t)
	t.Parallel() // beside the suite's other tests: -parallel bounds them all
	buildPeers(t)
	cases := []struct {
		impl, name string
		pass       bool
		failure    string // what the failing run's error must mention
		// dup: the failing run breaks the contract with exactly this many
		// messages at the handset twice (0: the contract must hold).
		dup int
		// lost: the failing run breaks the contract by losing messages
		// silently, and sends none twice.
		lost bool
	}{
		{"watermill-queue-confirm", "peer-crash-before-mark", true, "", 0, false},
		{"node-relay", "peer-crash-before-mark", true, "", 0, false},
		{"sendrecord", "peer-crash-before-mark", false, "", 1, false},
		{"jetstream", "peer-js-resend-outside-window", true, "", 0, false},
		{"river0512", "peer-rescuer-race", true, "", 0, false},
		{"river047", "peer-rescuer-race", false, "confirmed publishes of notification-outbox-1", 0, false},
		{"node-relay", "peer-unroutable", true, "", 0, false},
		{"node-relay-ignores-returns", "peer-unroutable", false, "", 0, true},
		{"node-relay", "peer-queue-full", true, "", 0, false},
		{"node-relay-nack-as-success", "peer-queue-full", false, "", 0, true},
	}
	for _, c := range cases {
		t.Run(c.impl+"/"+c.name, func(t *testing.T) {
			t.Parallel()
			s, ok := scenarios.LookupPeerCase(c.name)
			if !ok {
				t.Fatalf("no peer case %s", c.name)
			}
			o := scenarios.DefaultOptions()
			o.PGURL, o.AMQPURL, o.Bin, o.Artifacts, o.Impl = testenv.PGURL(), testenv.AMQPURL(), bin, "../artifacts", c.impl
			res := scenarios.Run(context.Background(), s, o)
			t.Logf("%s × %s seed=%d %.1fs: %s", c.impl, c.name, res.Seed, res.Duration.Seconds(), res.Verdict)
			switch {
			case c.pass && !res.Pass():
				t.Errorf("%s × %s failed (seed %d): %s\n  %s\n--- timeline\n%s", c.impl, c.name, res.Seed, res.Why(), res.Verdict.Details, res.Timeline)
			case !c.pass && res.Pass():
				t.Errorf("%s × %s passed: the harness did not catch the peer's known bug\n--- timeline\n%s", c.impl, c.name, res.Timeline)
			case !c.pass && c.lost && (res.Verdict.LostSilently == 0 || res.Verdict.Duplicated != 0):
				t.Errorf("%s × %s: want messages lost silently and none sent twice, got %s", c.impl, c.name, res.Verdict)
			case !c.pass && c.dup > 0 && (res.Err != nil || res.Verdict.Duplicated != c.dup):
				t.Errorf("%s × %s: want exactly %d message(s) at a handset twice and no harness error, got %v %s", c.impl, c.name, c.dup, res.Err, res.Verdict)
			case !c.pass && !c.lost && c.dup == 0 && (res.Err == nil || !strings.Contains(res.Err.Error(), c.failure) || !res.Verdict.OK()):
				t.Errorf("%s × %s failed for another reason than %q (the contract must still hold): %v %s", c.impl, c.name, c.failure, res.Err, res.Verdict)
			}
		})
	}
}

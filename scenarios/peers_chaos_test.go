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
	"github.com/outboxchaos/outboxchaos/scenarios/catalogue"
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
	for _, r := range []struct{ name, arg string }{
		{"node-relay", ""}, {"node-relay-ignores-returns", "--flaw=ignore-returns"}, {"node-relay-nack-as-success", "--flaw=nack-as-success"},
		{"node-relay-random-id", "--flaw=random-id"}, {"node-relay-no-confirms", "--no-confirms"},
		{"node-relay-no-points", "--no-killpoints"}, {"node-relay-mark-first", "--no-killpoints --flaw=mark-first"},
	} {
		command := append([]string{"node", relay}, strings.Fields(r.arg)...)
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
// the refused ones. A build that publishes each message under a random
// message_id has every copy parked by the worker with its alert: lost
// visibly, never silently, and the run settles. A build without confirms,
// which the contract allows, passes, and the cases that delay confirms do
// not apply to it. A build that declares no kill-point is killed from
// outside at the four moments of its seam and passes; the same build
// flawed to commit a batch as published before publishing it passes
// without faults and loses a message silently when killed from outside
// after its claim.
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
		// parked: the failing run parks every message with its alert, and
		// loses none silently, leaves none stuck, sends none twice.
		parked bool
	}{
		{"watermill-queue-confirm", "peer-crash-before-mark", true, "", 0, false, false},
		{"node-relay", "peer-crash-before-mark", true, "", 0, false, false},
		{"sendrecord", "peer-crash-before-mark", false, "", 1, false, false},
		{"jetstream", "peer-js-resend-outside-window", true, "", 0, false, false},
		{"river0512", "peer-rescuer-race", true, "", 0, false, false},
		{"river047", "peer-rescuer-race", false, "confirmed publishes of notification-outbox-1", 0, false, false},
		{"node-relay", "peer-unroutable", true, "", 0, false, false},
		{"node-relay-ignores-returns", "peer-unroutable", false, "", 0, true, false},
		{"node-relay", "peer-queue-full", true, "", 0, false, false},
		{"node-relay-nack-as-success", "peer-queue-full", false, "", 0, true, false},
		{"node-relay-random-id", "peer-happy", false, "", 0, false, true},
		{"node-relay-no-confirms", "peer-happy", true, "", 0, false, false},
		{"node-relay-no-points", "peer-kill-after-claim", true, "", 0, false, false},
		{"node-relay-no-points", "peer-kill-after-publish", true, "", 0, false, false},
		{"node-relay-no-points", "peer-kill-after-confirm", true, "", 0, false, false},
		{"node-relay-no-points", "peer-kill-after-mark", true, "", 0, false, false},
		{"node-relay-mark-first", "peer-happy", true, "", 0, false, false},
		{"node-relay-mark-first", "peer-kill-after-claim", false, "", 0, true, false},
	}
	for _, c := range cases {
		t.Run(c.impl+"/"+c.name, func(t *testing.T) {
			t.Parallel()
			s, ok := catalogue.LookupPeerCase(c.name)
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
			case !c.pass && c.parked && (res.Verdict.LostVisibly != res.Verdict.Intents || res.Verdict.LostSilently+res.Verdict.Stuck+res.Verdict.Duplicated != 0):
				t.Errorf("%s × %s: want every message parked with its alert (lost visibly), none lost silently, stuck or sent twice, got %s", c.impl, c.name, res.Verdict)
			case !c.pass && c.lost && (res.Verdict.LostSilently == 0 || res.Verdict.Duplicated != 0 ||
				res.Verdict.DeliveredOnce+res.Verdict.LostSilently != res.Verdict.Intents):
				// One loss counts once: every message is either delivered
				// once or lost silently, none also stuck or lost visibly.
				t.Errorf("%s × %s: want messages lost silently, the rest delivered once, none counted twice or sent twice, got %s", c.impl, c.name, res.Verdict)
			case !c.pass && c.dup > 0 && (res.Err != nil || res.Verdict.Duplicated != c.dup):
				t.Errorf("%s × %s: want exactly %d message(s) at a handset twice and no harness error, got %v %s", c.impl, c.name, c.dup, res.Err, res.Verdict)
			case !c.pass && !c.lost && !c.parked && c.dup == 0 && (res.Err == nil || !strings.Contains(res.Err.Error(), c.failure) || !res.Verdict.OK()):
				t.Errorf("%s × %s failed for another reason than %q (the contract must still hold): %v %s", c.impl, c.name, c.failure, res.Err, res.Verdict)
			}
		})
	}
}

// TestPointlessRelayApplies: a relay that declares no kill-point is not
// run on the kill-point cases, which could not arm it, and is run on the
// cases that kill it from outside.
func TestPointlessRelayApplies(t *testing.T) {
	buildPeers(t)
	p, err := peers.Lookup("node-relay-no-points")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Features.KillPoints) != 0 {
		t.Fatalf("node relay --no-killpoints declares %v", p.Features.KillPoints)
	}
	for name, want := range map[string]bool{"peer-crash-after-claim": false, "peer-crash-before-mark": false,
		"peer-kill-after-claim": true, "peer-kill-after-publish": true, "peer-kill-after-confirm": true, "peer-kill-after-mark": true} {
		s, ok := catalogue.LookupPeerCase(name)
		if !ok {
			t.Fatalf("no peer case %s", name)
		}
		if got, why := catalogue.PeerCaseApplies(s, p); got != want {
			t.Errorf("%s applies to the relay without kill-points: %v (%s), want %v", name, got, why, want)
		}
	}
}

// TestConfirmLessRelayApplies: a relay that declares it publishes without
// confirms is not run on the cases whose fault delays what RabbitMQ sends
// it, which would never fire (a "fault never fired" failure is not a
// verdict on the relay); the other cases apply as to any relay.
func TestConfirmLessRelayApplies(t *testing.T) {
	buildPeers(t)
	p, err := peers.Lookup("node-relay-no-confirms")
	if err != nil {
		t.Fatal(err)
	}
	if !p.Features.NoConfirms {
		t.Fatalf("node relay --no-confirms declares %+v", p.Features)
	}
	for name, want := range map[string]bool{"peer-confirm-late": false, "peer-stale": false, "peer-happy": true, "peer-queue-full": true, "peer-publish-lost": true,
		"peer-kill-after-claim": true, "peer-kill-after-publish": false} {
		s, ok := catalogue.LookupPeerCase(name)
		if !ok {
			t.Fatalf("no peer case %s", name)
		}
		if got, why := catalogue.PeerCaseApplies(s, p); got != want {
			t.Errorf("%s applies to the confirm-less relay: %v (%s), want %v", name, got, why, want)
		}
	}
}

//go:build chaos

package scenarios_test

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"strconv"
	"testing"

	"pgregory.net/rapid"

	"github.com/outboxchaos/outboxchaos/scenarios"
	"github.com/outboxchaos/outboxchaos/system/testenv"
)

// rapidDraw adapts rapid's generator to scenarios.Draw.
type rapidDraw struct{ t *rapid.T }

func (d rapidDraw) Int(label string, lo, hi int) int { return rapid.IntRange(lo, hi).Draw(d.t, label) }

// TestProperty draws random fault schedules (how many notifications of
// which kinds, duplicate enqueues, relay and worker replicas, kill-points,
// failpoints, vendor fault modes, link cuts and latency, clock placed before
// the 20:40 / 20:50 cut-offs), runs the real pipeline until quiescent,
// restarting killed pods, and asserts the checker's verdict: nothing twice,
// nothing lost silently, nothing unexpected, nothing stuck, and no
// settlement the handset ledger contradicts. Schedules take turns running
// without a reconciler, with one, and with one that re-sends.
//
// Budget: -rapid.checks=N (make chaos CHECKS=N). Replay: -rapid.seed=S
// (make chaos SEED=S). Failing schedules shrink; rapid saves them under
// testdata/rapid/ and replays them first on the next run. With -shard=K/N
// (make chaos SHARD=K/N) the budget is the whole run's: this shard runs
// its share of the checks, from a seed derived from -rapid.seed and K/N,
// so the same SEED and SHARD replay the same schedules.
func TestProperty(t *testing.T) {
	testenv.Require(t)
	shardRapid(t)
	n := 0
	rapid.Check(t, func(rt *rapid.T) {
		n++
		s := scenarios.Generate(rapidDraw{rt})
		// Every third schedule runs without a reconciler, the others with
		// one, settling only or re-sending too; a swarm schedule drew its
		// own.
		if s.Swarm == nil {
			s.Reconcile = scenarios.ReconcileModes[n%len(scenarios.ReconcileModes)]
		}
		o := scenarios.DefaultOptions()
		o.PGURL, o.AMQPURL, o.Bin, o.Artifacts = testenv.PGURL(), testenv.AMQPURL(), bin, "../artifacts"
		res := scenarios.Run(context.Background(), s.Scenario(fmt.Sprintf("property-%d", n)), o)
		t.Logf("check %d seed=%d: %s\n  %.1fs: %s", n, res.Seed, s, res.Duration.Seconds(), res.Verdict)
		if res.Err != nil {
			rt.Fatalf("run failed: %v\n--- timeline\n%s", res.Err, res.Timeline)
		}
		if !res.Verdict.OK() {
			rt.Fatalf("contract broken: %s\n  %s\n--- timeline\n%s", res.Verdict, res.Verdict.Details, res.Timeline)
		}
	})
}

// TestPropertyFailfiles runs again the schedules rapid saved under
// testdata/rapid/TestProperty/ when they failed. Their bitstreams stopped
// replaying once Generate drew more (rapid calls them "no longer valid"),
// so each is read from the draws it logged (scenarios.ReplayFailfile).
func TestPropertyFailfiles(t *testing.T) {
	testenv.Require(t)
	files, err := filepath.Glob(filepath.Join("testdata", "rapid", "TestProperty", "*.fail"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no saved failfile: %v", err)
	}
	for i, f := range files {
		if !shard.Has(i) {
			continue
		}
		s, err := scenarios.ReplayFailfile(f)
		if err != nil {
			t.Fatal(err)
		}
		o := scenarios.DefaultOptions()
		o.PGURL, o.AMQPURL, o.Bin, o.Artifacts = testenv.PGURL(), testenv.AMQPURL(), bin, "../artifacts"
		res := scenarios.Run(context.Background(), s.Scenario(fmt.Sprintf("failfile-%d", i)), o)
		t.Logf("%s seed=%d: %s\n  %.1fs: %s", filepath.Base(f), res.Seed, s, res.Duration.Seconds(), res.Verdict)
		if res.Err != nil {
			t.Fatalf("%s: run failed: %v\n--- timeline\n%s", f, res.Err, res.Timeline)
		}
		if !res.Verdict.OK() {
			t.Fatalf("%s: contract broken: %s\n  %s\n--- timeline\n%s", f, res.Verdict, res.Verdict.Details, res.Timeline)
		}
	}
}

// shardRapid narrows rapid's budget and seed to this shard's.
func shardRapid(t *testing.T) {
	if shard.N <= 1 {
		return
	}
	checks, err := strconv.Atoi(flag.Lookup("rapid.checks").Value.String())
	if err != nil {
		t.Fatalf("rapid.checks: %v", err)
	}
	base, err := strconv.ParseUint(flag.Lookup("rapid.seed").Value.String(), 10, 64)
	if err != nil {
		t.Fatalf("rapid.seed: %v", err)
	}
	if base == 0 {
		t.Fatal("a shard needs the run's seed: pass -rapid.seed (make chaos sets it)")
	}
	share, seed := shard.Share(checks), shard.Seed(base)
	for name, v := range map[string]string{"rapid.checks": strconv.Itoa(share), "rapid.seed": strconv.FormatUint(seed, 10)} {
		if err := flag.Set(name, v); err != nil {
			t.Fatalf("set %s: %v", name, err)
		}
	}
	t.Logf("shard %s: %d of %d checks, seed %d from the run's %d", shard, share, checks, seed, base)
	if share == 0 {
		t.Skipf("shard %s has no check of %d", shard, checks)
	}
}

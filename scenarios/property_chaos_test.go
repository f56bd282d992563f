//go:build chaos

package scenarios_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"pgregory.net/rapid"

	"github.com/outboxchaos/outboxchaos/scenarios"
	"github.com/outboxchaos/outboxchaos/scenarios/explore"
	"github.com/outboxchaos/outboxchaos/system/testenv"
)

// rapidDraw adapts rapid's generator to explore.Draw.
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
// Budget: -rapid.checks=N (make chaos CHECKS=N), run in -lanes lanes at
// once (make chaos LANES=L, default 4), each its share of the checks from
// a seed derived from -rapid.seed and the lane. Replay: the same
// -rapid.seed and -lanes (make chaos SEED=S). Failing schedules shrink;
// rapid saves them under testdata/rapid/ and replays them first on the
// next run; one failing check runs again alone with -lanes 1 and the
// -rapid.failfile (or -rapid.seed) rapid printed. With -shard=K/N (make
// chaos SHARD=K/N) the budget is the whole run's: this shard runs its
// share of the checks, from a seed derived from -rapid.seed and K/N, so
// the same SEED and SHARD replay the same schedules.
func TestProperty(t *testing.T) {
	testenv.Require(t)
	t.Parallel() // beside the suite's other tests: -parallel bounds them all
	shardRapid(t)
	checks, base := rapidBudget(t)
	lanes := min(*propertyLanes, checks)
	if lanes <= 1 {
		checkProperty(t, 1)
		return
	}
	// Each lane is a shard of this run's budget (explore.Shard): its
	// share of the checks, from a seed derived from the run's seed and
	// the lane. rapid reads -rapid.checks and -rapid.seed when its Check
	// starts, before the first check: a lane holds flagMu from setting
	// them until its first check runs (or Check returns), so each lane
	// reads its own.
	var flagMu sync.Mutex
	for k := 1; k <= lanes; k++ {
		lane := explore.Shard{K: k, N: lanes}
		t.Run(fmt.Sprintf("lane-%d", k), func(t *testing.T) {
			t.Parallel()
			flagMu.Lock()
			release := sync.OnceFunc(flagMu.Unlock)
			defer release()
			seed := base
			if base != 0 { // 0: rapid draws a random seed, each lane its own
				seed = lane.Seed(base)
			}
			setRapid(t, lane.Share(checks), seed)
			t.Logf("lane %s: %d of %d checks, seed %d from the run's %d", lane, lane.Share(checks), checks, seed, base)
			checkProperty(t, k, release)
		})
	}
}

// propertyLanes is how many rapid.Check lanes TestProperty runs at once
// (make chaos LANES=N): a schedule spends most of its time waiting on its
// own fault windows, so one at a time leaves the machine idle. The same
// -rapid.seed and the same lanes draw the same schedules.
var propertyLanes = flag.Int("lanes", 4, "how many lanes of TestProperty's checks run at once, each its share of -rapid.checks")

// checkProperty is TestProperty's rapid.Check; started, if given, is
// called when the first check begins (rapid has read its flags by then).
func checkProperty(t *testing.T, lane int, started ...func()) {
	n := 0
	rapid.Check(t, func(rt *rapid.T) {
		for _, f := range started {
			f()
		}
		n++
		s := explore.Generate(rapidDraw{rt})
		// Every third schedule runs without a reconciler, the others with
		// one, settling only or re-sending too; a swarm schedule drew its
		// own, and a held pair of reconcilers needs a re-sending one.
		if s.Swarm == nil && s.Reconcile == "" {
			s.Reconcile = explore.ReconcileModes[n%len(explore.ReconcileModes)]
		}
		o := suiteOptions()
		res := scenarios.Run(context.Background(), s.Scenario(fmt.Sprintf("property-%d-%d", lane, n)), o)
		t.Logf("check %d seed=%d: %s\n  %.1fs: %s", n, res.Seed, s, res.Duration.Seconds(), res.Verdict)
		if res.NotJudged != nil {
			rt.Fatalf("not judged, no verdict (the harness or its infrastructure failed): %v\n--- timeline\n%s", res.NotJudged, res.Timeline)
		}
		if res.Err != nil {
			rt.Fatalf("run failed: %v\n--- timeline\n%s", res.Err, res.Timeline)
		}
		if !res.Verdict.OK() {
			rt.Fatalf("contract broken: %s\n  %s\n--- timeline\n%s", res.Verdict, res.Verdict.Details, res.Timeline)
		}
	})
}

// TestPropertyFailfiles runs again the schedules rapid saved under
// testdata/rapid/TestProperty/ (and a lane's TestProperty_lane-K/) when
// they failed. Their bitstreams stopped
// replaying once Generate drew more (rapid calls them "no longer valid"),
// so each is read from the draws it logged (explore.ReplayFailfile).
func TestPropertyFailfiles(t *testing.T) {
	testenv.Require(t)
	t.Parallel() // beside the suite's other tests: -parallel bounds them all
	// rapid saves a lane's failfiles under TestProperty_lane-K/.
	files, err := filepath.Glob(filepath.Join("testdata", "rapid", "TestProperty", "*.fail"))
	lanes, lerr := filepath.Glob(filepath.Join("testdata", "rapid", "TestProperty_lane-*", "*.fail"))
	files, err = append(files, lanes...), errors.Join(err, lerr)
	if err != nil || len(files) == 0 {
		t.Fatalf("no saved failfile: %v", err)
	}
	for i, f := range files {
		if !shard.Has(i) {
			continue
		}
		s, err := explore.ReplayFailfile(f)
		if err != nil {
			t.Fatal(err)
		}
		o := suiteOptions()
		res := scenarios.Run(context.Background(), s.Scenario(fmt.Sprintf("failfile-%d", i)), o)
		t.Logf("%s seed=%d: %s\n  %.1fs: %s", filepath.Base(f), res.Seed, s, res.Duration.Seconds(), res.Verdict)
		if res.NotJudged != nil {
			t.Fatalf("%s: not judged, no verdict (the harness or its infrastructure failed): %v\n--- timeline\n%s", f, res.NotJudged, res.Timeline)
		}
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
	checks, base := rapidBudget(t)
	if base == 0 {
		t.Fatal("a shard needs the run's seed: pass -rapid.seed (make chaos sets it)")
	}
	share, seed := shard.Share(checks), shard.Seed(base)
	setRapid(t, share, seed)
	t.Logf("shard %s: %d of %d checks, seed %d from the run's %d", shard, share, checks, seed, base)
	if share == 0 {
		t.Skipf("shard %s has no check of %d", shard, checks)
	}
}

// rapidBudget reads -rapid.checks and -rapid.seed.
func rapidBudget(t *testing.T) (checks int, seed uint64) {
	checks, err := strconv.Atoi(flag.Lookup("rapid.checks").Value.String())
	if err != nil {
		t.Fatalf("rapid.checks: %v", err)
	}
	seed, err = strconv.ParseUint(flag.Lookup("rapid.seed").Value.String(), 10, 64)
	if err != nil {
		t.Fatalf("rapid.seed: %v", err)
	}
	return checks, seed
}

// setRapid sets -rapid.checks and -rapid.seed for the next rapid.Check.
func setRapid(t *testing.T, checks int, seed uint64) {
	for name, v := range map[string]string{"rapid.checks": strconv.Itoa(checks), "rapid.seed": strconv.FormatUint(seed, 10)} {
		if err := flag.Set(name, v); err != nil {
			t.Fatalf("set %s: %v", name, err)
		}
	}
}

//go:build chaos

package scenarios_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"sync"
	"testing"

	"github.com/outboxchaos/outboxchaos/scenarios"
	"github.com/outboxchaos/outboxchaos/scenarios/catalogue"
	"github.com/outboxchaos/outboxchaos/scenarios/explore"
	"github.com/outboxchaos/outboxchaos/scenarios/scenario"
	"github.com/outboxchaos/outboxchaos/system/canary"
	"github.com/outboxchaos/outboxchaos/system/sandbox"
	"github.com/outboxchaos/outboxchaos/system/testenv"
)

var bin string

// shardFlag is this runner's part of the budget (make chaos SHARD=K/N):
// every K-th of N named scenarios, canaries and crash points, and its
// share of the random schedules drawn from a seed of its own.
var shardFlag = flag.String("shard", "", "run shard K/N of the budget (default: all of it)")

// shard is the parsed -shard (checked in TestMain).
var shard explore.Shard

// TestMain builds the outboxchaos binary once; the scenarios run it as pods.
func TestMain(m *testing.M) {
	flag.Parse()
	var err error
	if shard, err = explore.ParseShard(*shardFlag); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	dir, err := os.MkdirTemp("", "outboxchaos-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "outboxchaos")
	var race []string
	if os.Getenv("OUTBOXCHAOS_POD_RACE") == "1" {
		race = []string{"-race"}
	}
	// The harness's build, and the pods' beside it as make build puts
	// it (scenarios.pipelineBin).
	for _, build := range [][]string{{"build", "-o", bin}, {"build", "-tags", "pod", "-o", bin + "-pod"}} {
		cmd := exec.Command("go", append(append(build, race...), "../cmd/outboxchaos")...)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintf(os.Stderr, "build outboxchaos for the pods: %v\n", err)
			os.Exit(1)
		}
	}
	code := m.Run()
	if pool != nil {
		if err := pool.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "drop the kept schemas: %v\n", err)
		}
	}
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

var (
	poolOnce sync.Once
	pool     *sandbox.Pool
)

// kept is the suite's pool of kept, migrated schemas, made on first use
// (after testenv.Require, which may start containers): the runs of our
// pipeline without a canary take their schemas from it, as explore's do.
// TestMain drops them.
func kept() *sandbox.Pool {
	poolOnce.Do(func() { pool = sandbox.NewPool(testenv.PGURL(), testenv.AMQPURL(), 0) })
	return pool
}

// suiteOptions are the options every run of the suite starts from: the
// test services, the built binary, artifacts beside the repository's,
// migrated schemas from the suite's pool.
func suiteOptions() scenarios.Options {
	o := scenarios.DefaultOptions()
	o.PGURL, o.AMQPURL, o.Bin, o.Artifacts = testenv.PGURL(), testenv.AMQPURL(), bin, "../artifacts"
	o.Sandboxes = kept()
	return o
}

// TestScenario runs every named scenario against the real services; each
// must match its row of the design's failure table. A run whose clock jumped
// while it settled (internal/run/jump.go) runs again without jumps and must reach the
// same verdict and counts: jumps only save time.
func TestScenario(t *testing.T) {
	testenv.Require(t)
	t.Parallel() // beside the suite's other tests: -parallel bounds them all
	for i, s := range catalogue.Named() {
		if !shard.Has(i) {
			continue
		}
		t.Run(s.Name, func(t *testing.T) {
			t.Parallel()
			o := suiteOptions()
			res := scenarios.Run(context.Background(), s, o)
			t.Logf("%s seed=%d %.1fs: %s\n  cost: %s", s.Name, res.Seed, res.Duration.Seconds(), res.Verdict, res.Cost)
			if !res.Pass() {
				t.Errorf("scenario %s failed (seed %d, record in %s): %s\n  %s\n--- timeline\n%s", s.Name, res.Seed, res.Artifacts, res.Why(), res.Verdict.Details, res.Timeline)
				return
			}
			if res.Cost.Jumps == 0 {
				return
			}
			// The clock jumped while the run settled: the same run
			// without jumps must reach the same verdict and counts.
			o.NoJumps = true
			ref := scenarios.Run(context.Background(), s, o)
			t.Logf("%s without jumps %.1fs: %s", s.Name, ref.Duration.Seconds(), ref.Verdict)
			if ref.Pass() != res.Pass() || ref.Verdict.String() != res.Verdict.String() {
				t.Errorf("scenario %s (seed %d): %d clock jumps changed the verdict\n  with jumps:    pass=%v %s\n  without jumps: pass=%v %s (%s)\n--- timeline without jumps\n%s",
					s.Name, res.Seed, res.Cost.Jumps, res.Pass(), res.Verdict, ref.Pass(), ref.Verdict, ref.Why(), ref.Timeline)
			}
		})
	}
}

// TestCanaries enables each deliberate bug in turn: at least one of its
// catcher scenarios must go red, or the harness could not have failed. It
// stops at the first red catcher (explore.Catch); make report and
// outboxchaos canary run every catcher and name each.
func TestCanaries(t *testing.T) {
	testenv.Require(t)
	t.Parallel() // beside the suite's other tests: -parallel bounds them all
	var bugs []string
	for bug := range explore.Catchers {
		bugs = append(bugs, bug)
	}
	sort.Strings(bugs)
	for i, bug := range bugs {
		if !shard.Has(i) {
			continue
		}
		catchers := explore.Catchers[bug]
		t.Run(bug, func(t *testing.T) {
			t.Parallel()
			o := scenarios.DefaultOptions()
			o.PGURL, o.AMQPURL, o.Bin, o.Artifacts = testenv.PGURL(), testenv.AMQPURL(), bin, "../artifacts"
			res := explore.Catch(context.Background(), o, bug)
			switch res.Outcome() {
			case scenarios.OutcomeError:
				t.Errorf("canary %s not judged: no catcher of %v went red and %v could not be judged (an error, not a verdict)", bug, catchers, res.NotJudged)
			case scenarios.OutcomeFail:
				t.Errorf("canary %s survived: none of %v went red", bug, catchers)
			}
			t.Logf("canary %s caught by %v", bug, res.CaughtBy)
		})
	}
}

// TestReplayFromJSON saves a failing run (a canary caught), replays it
// from its run.json through the scenario's JSON, and must reach the same
// verdict.
func TestReplayFromJSON(t *testing.T) {
	testenv.Require(t)
	t.Parallel()
	s, _ := catalogue.Lookup("worker-crash-after-claim")
	o := scenarios.DefaultOptions()
	o.PGURL, o.AMQPURL, o.Bin, o.Artifacts, o.Bug = testenv.PGURL(), testenv.AMQPURL(), bin, t.TempDir(), canary.CheckThenAct
	first := scenarios.Run(context.Background(), s, o)
	if first.Pass() || first.Artifacts == "" {
		t.Fatalf("want a failing run with artifacts, got pass=%v artifacts=%q: %v", first.Pass(), first.Artifacts, first.Err)
	}
	b, err := os.ReadFile(filepath.Join(first.Artifacts, "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	replay, rec, err := scenario.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	o.Seed, o.Bug = rec.Seed, rec.Bug
	again := scenarios.Run(context.Background(), replay, o)
	a, b2 := first.Verdict, again.Verdict
	a.Details, b2.Details = nil, nil
	if !reflect.DeepEqual(a, b2) || again.Pass() != first.Pass() || fmt.Sprint(again.Err) != fmt.Sprint(first.Err) {
		t.Errorf("replay differs:\n first: %s %v\n again: %s %v", first.Verdict, first.Err, again.Verdict, again.Err)
	}
}

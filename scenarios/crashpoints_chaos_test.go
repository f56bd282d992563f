//go:build chaos

package scenarios_test

import (
	"context"
	"testing"

	"github.com/outboxchaos/outboxchaos/scenarios"
	"github.com/outboxchaos/outboxchaos/scenarios/explore"
	"github.com/outboxchaos/outboxchaos/system/canary"
	"github.com/outboxchaos/outboxchaos/system/testenv"
)

// crashSample is CI's deterministic share of `make crashpoints`: per
// workload, how many points (picked by seed 1 from those up to hit 2).
var crashSample = map[string]int{"one": 20, "each-kind": 14, "unknown": 10, "rejected": 8, "stuck": 10, "reconcile": 4, "expired": 4}

// TestCrashPointsSample discovers the crash points of a few workloads and
// runs a deterministic sample of them: every run must keep the contract
// with the crashed process replaced under a new name.
func TestCrashPointsSample(t *testing.T) {
	testenv.Require(t)
	t.Parallel() // beside the suite's other tests: -parallel bounds them all
	o := suiteOptions()
	o.Seed = 1
	total, index := 0, 0
	for _, w := range explore.CrashWorkloads {
		k, ok := crashSample[w.Name]
		if !ok {
			continue
		}
		d, res, err := explore.Discover(context.Background(), w, o)
		if err != nil {
			t.Fatalf("discovery of %s: %v\n%s", w.Name, err, res.Timeline)
		}
		all := d.Targets(2)
		var ts []explore.CrashTarget
		for _, tg := range explore.Sample(all, k, 1) {
			if shard.Has(index) {
				ts = append(ts, tg)
			}
			index++
		}
		perProc := map[string]int{}
		for _, c := range explore.Explore(context.Background(), w, ts, o, 2, nil) {
			perProc[c.Target.Process]++
			if c.Violation() {
				t.Errorf("%s %s broke the contract (record %s): %v %s\n  replay: %s\n--- timeline\n%s",
					w.Name, c.Target, c.Result.Artifacts, c.Result.Err, c.Result.Verdict, c.Replay(), c.Result.Timeline)
			}
		}
		total += len(ts)
		t.Logf("crash points %s: %d of %d explored, per process %v", w.Name, len(ts), len(all), perProc)
	}
	t.Logf("crash points explored: %d", total)
}

// TestCrashPointsCatchCanaries: the automatic crash points catch two
// canaries no one placed a kill-point for in their enumeration: a worker
// without its claim INSERT re-sends after dying right after the vendor
// answered, and a relay that marks PUBLISHED first loses the message when
// it dies before its publish.
func TestCrashPointsCatchCanaries(t *testing.T) {
	testenv.Require(t)
	t.Parallel() // beside the suite's other tests: -parallel bounds them all
	w, _ := explore.LookupCrashWorkload("one")
	for _, c := range []struct{ bug, target string }{
		{canary.CheckThenAct, "worker:http:vendor-message:after:1"},
		{canary.MarkBeforePublish, "relay:amqp:publish-send:before:1"},
	} {
		t.Run(c.bug, func(t *testing.T) {
			t.Parallel()
			tg, err := explore.ParseCrashTarget(c.target)
			if err != nil {
				t.Fatal(err)
			}
			o := scenarios.DefaultOptions()
			o.PGURL, o.AMQPURL, o.Bin, o.Artifacts, o.Seed, o.Bug = testenv.PGURL(), testenv.AMQPURL(), bin, "", 1, c.bug
			out := explore.Explore(context.Background(), w, []explore.CrashTarget{tg}, o, 1, nil)[0]
			if !out.Fired {
				t.Fatalf("%s never died at %s\n%s", c.bug, c.target, out.Result.Timeline)
			}
			if !out.Violation() {
				t.Fatalf("canary %s survived crash point %s: %s\n%s", c.bug, c.target, out.Result.Verdict, out.Result.Timeline)
			}
			t.Logf("canary %s caught at %s: %s", c.bug, c.target, out.Result.Verdict)
		})
	}
}

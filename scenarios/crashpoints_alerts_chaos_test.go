//go:build chaos

package scenarios_test

import (
	"context"
	"slices"
	"testing"

	"github.com/outboxchaos/outboxchaos/alertsites"
	"github.com/outboxchaos/outboxchaos/scenarios/explore"
	"github.com/outboxchaos/outboxchaos/system/canary"
	"github.com/outboxchaos/outboxchaos/system/testenv"
)

// TestCrashPointsAlertWindows runs, in full, every crash point between an
// alert and the durable writes beside it, in every workload the alert map
// names: a state change that commits before its alert is sent must
// survive a crash in between (the alert retried, or owed by the row), and
// one announced before it commits must survive a crash before the
// commit. A workload whose process the map names posts no alert there
// fails: the map no longer says what reaches the alert.
func TestCrashPointsAlertWindows(t *testing.T) {
	testenv.Require(t)
	t.Parallel() // beside the suite's other tests: -parallel bounds them all
	es, err := alertsites.Entries()
	if err != nil {
		t.Fatal(err)
	}
	o := suiteOptions()
	o.Seed = 1
	total, index := 0, 0
	for _, name := range alertsites.Workloads(es) {
		w, ok := explore.LookupCrashWorkload(name)
		if !ok {
			t.Fatalf("%s names workload %q, which is not a crash workload", alertsites.File, name)
		}
		all, res, err := explore.AlertWindows(context.Background(), w, o)
		if err != nil {
			t.Fatalf("discovery of %s: %v\n%s", w.Name, err, res.Timeline)
		}
		posted := map[string]bool{}
		for _, tg := range all {
			posted[tg.Process] = true
		}
		for _, e := range es {
			if slices.Contains(e.Workloads, name) && !posted[e.Process] {
				t.Errorf("%s line %d: workload %s reached no alert of %s", alertsites.File, e.Line, name, e.Process)
			}
		}
		var ts []explore.CrashTarget
		for _, tg := range all {
			if shard.Has(index) {
				ts = append(ts, tg)
			}
			index++
		}
		for _, c := range explore.Explore(context.Background(), w, ts, o, 2, nil) {
			if c.Violation() {
				t.Errorf("%s %s broke the contract (record %s): %v %s\n  replay: %s\n--- timeline\n%s",
					w.Name, c.Target, c.Result.Artifacts, c.Result.Err, c.Result.Verdict, c.Replay(), c.Result.Timeline)
			}
		}
		total += len(ts)
		t.Logf("alert windows %s: %d points of %d run", w.Name, len(ts), len(all))
	}
	t.Logf("alert-window crash points run: %d", total)
}

// TestAlertWindowsCatchAlertAfterCommit: the alert windows catch a relay
// that commits EXPIRED before it alerts, a bug a sample of the crash
// points may miss: it shows only when the relay dies between the commit
// and the post.
func TestAlertWindowsCatchAlertAfterCommit(t *testing.T) {
	testenv.Require(t)
	t.Parallel()
	w, _ := explore.LookupCrashWorkload("expired")
	o := suiteOptions()
	o.Seed, o.Artifacts, o.Bug, o.Sandboxes = 1, "", canary.AlertAfterCommit, nil
	ts, res, err := explore.AlertWindows(context.Background(), w, o)
	if err != nil {
		t.Fatalf("discovery of %s: %v\n%s", w.Name, err, res.Timeline)
	}
	broke := 0
	for _, c := range explore.Explore(context.Background(), w, ts, o, 2, nil) {
		if c.Violation() {
			broke++
		}
	}
	if broke == 0 {
		t.Errorf("none of the %d alert-window points of %s caught canary %s", len(ts), w.Name, canary.AlertAfterCommit)
	}
}

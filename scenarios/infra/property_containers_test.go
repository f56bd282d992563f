//go:build containers

package infra_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"pgregory.net/rapid"

	"github.com/outboxchaos/outboxchaos/infra"
	"github.com/outboxchaos/outboxchaos/scenarios/explore"
)

// rapidDraw adapts rapid's generator to explore.Draw.
type rapidDraw struct{ t *rapid.T }

func (d rapidDraw) Int(label string, lo, hi int) int { return rapid.IntRange(lo, hi).Draw(d.t, label) }

// TestInfraProperty draws random schedules with one or two
// infrastructure faults (a crash, a graceful restart or a freeze of the
// broker or the database, at a random offset for a random while) on top of
// the usual ones, runs each on containers of its own and asserts the
// contract. Budget: -rapid.checks=N (make infra INFRA_CHECKS=N).
func TestInfraProperty(t *testing.T) {
	infra.Require(t)
	n := 0
	rapid.Check(t, func(rt *rapid.T) {
		n++
		s := explore.GenerateInfra(rapidDraw{rt})
		sc := s.Scenario(fmt.Sprintf("infra-property-%d", n))
		res := runOnce(t, sc)
		t.Logf("check %d seed=%d: %s\n  %.1fs: %s", n, res.Seed, s, res.Duration.Seconds(), res.Verdict)
		if res.Err == nil && res.Verdict.OK() {
			return
		}
		replay := saveSchedule(t, s, sc.Name)
		if res.NotJudged != nil {
			rt.Fatalf("not judged, no verdict (the harness or its infrastructure failed): %v\n%s--- timeline\n%s", res.NotJudged, replay, res.Timeline)
		}
		if res.Err != nil {
			rt.Fatalf("run failed: %v\n%s--- timeline\n%s", res.Err, replay, res.Timeline)
		}
		rt.Fatalf("contract broken: %s\n  %s\n%s--- timeline\n%s", res.Verdict, res.Verdict.Details, replay, res.Timeline)
	})
}

// saveSchedule writes a failing schedule where the artifacts go and says
// how to run it again (TestInfraReplay).
func saveSchedule(t *testing.T, s explore.Schedule, name string) string {
	path, err := filepath.Abs(filepath.Join("../../artifacts", name+".schedule.json"))
	if err == nil {
		err = os.MkdirAll(filepath.Dir(path), 0o755)
	}
	if err == nil {
		b, _ := json.MarshalIndent(s, "", "  ")
		err = os.WriteFile(path, append(b, '\n'), 0o644)
	}
	if err != nil {
		t.Logf("save the schedule: %v", err)
		return ""
	}
	return fmt.Sprintf("  replay: make infra-replay SCHEDULE=%s REPLAYS=5\n", path)
}

// TestInfraReplay runs the schedule in the JSON file
// $OUTBOXCHAOS_SCHEDULE (as a failing property check prints it)
// $OUTBOXCHAOS_REPLAYS times (default 1, as many at once as -parallel
// allows), each on containers of its own,
// and asserts the contract every time: a failure TestInfraProperty found
// once is rerun until it shows its timeline. Skipped when unset.
func TestInfraReplay(t *testing.T) {
	path := os.Getenv("OUTBOXCHAOS_SCHEDULE")
	if path == "" {
		t.Skip("OUTBOXCHAOS_SCHEDULE names no schedule file")
	}
	infra.Require(t)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read schedule: %v", err)
	}
	var s explore.Schedule
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	n := 1
	if v := os.Getenv("OUTBOXCHAOS_REPLAYS"); v != "" {
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			t.Fatalf("OUTBOXCHAOS_REPLAYS=%q: want a count of at least 1", v)
		}
	}
	for i := 1; i <= n; i++ {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			res := runOnce(t, s.Scenario(fmt.Sprintf("infra-replay-%d", i)))
			t.Logf("replay %d of %d seed=%d: %s\n  %.1fs: %s", i, n, res.Seed, s, res.Duration.Seconds(), res.Verdict)
			if res.NotJudged != nil {
				t.Fatalf("not judged, no verdict (the harness or its infrastructure failed): %v\n--- timeline\n%s", res.NotJudged, res.Timeline)
			}
			if res.Err != nil {
				t.Fatalf("run failed: %v\n--- timeline\n%s", res.Err, res.Timeline)
			}
			if !res.Verdict.OK() {
				t.Fatalf("contract broken: %s\n  %s\n--- timeline\n%s", res.Verdict, res.Verdict.Details, res.Timeline)
			}
			if testing.Verbose() {
				t.Logf("--- timeline\n%s", res.Timeline)
			}
		})
	}
}

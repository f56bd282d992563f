//go:build containers

package infra_test

import (
	"fmt"
	"testing"

	"pgregory.net/rapid"

	"github.com/outboxchaos/outboxchaos/infra"
	"github.com/outboxchaos/outboxchaos/scenarios"
)

// rapidDraw adapts rapid's generator to scenarios.Draw.
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
		s := scenarios.GenerateInfra(rapidDraw{rt})
		sc := s.Scenario(fmt.Sprintf("infra-property-%d", n))
		res := runOnce(t, sc)
		t.Logf("check %d seed=%d: %s\n  %.1fs: %s", n, res.Seed, s, res.Duration.Seconds(), res.Verdict)
		if res.Err != nil {
			rt.Fatalf("run failed: %v\n--- timeline\n%s", res.Err, res.Timeline)
		}
		if !res.Verdict.OK() {
			rt.Fatalf("contract broken: %s\n  %s\n--- timeline\n%s", res.Verdict, res.Verdict.Details, res.Timeline)
		}
	})
}

//go:build containers

package infra_test

import (
	"testing"

	"github.com/outboxchaos/outboxchaos/infra"
	"github.com/outboxchaos/outboxchaos/scenarios/catalogue"
)

// TestInfraScenario runs every infrastructure scenario on its own
// containers; each must show its outcome and the contract (nothing twice,
// nothing lost silently).
func TestInfraScenario(t *testing.T) {
	infra.Require(t)
	for _, s := range catalogue.Infra() {
		t.Run(s.Name, func(t *testing.T) {
			t.Parallel()
			res := run(t, s, "")
			t.Logf("%s seed=%d %.1fs: %s", s.Name, res.Seed, res.Duration.Seconds(), res.Verdict)
			for _, f := range res.Faults {
				t.Logf("  fault %s %s fired=%v: %s", f.Kind, f.Target, f.Fired, f.Detail)
			}
			if !res.Pass() {
				t.Errorf("scenario %s failed (seed %d, record in %s): %s\n  %s\n--- timeline\n%s", s.Name, res.Seed, res.Artifacts, res.Why(), res.Verdict.Details, res.Timeline)
			}
		})
	}
}

// TestInfraCanaries arms each canary the infrastructure scenarios catch:
// at least one of its catchers must go red, or they could not have failed.
func TestInfraCanaries(t *testing.T) {
	infra.Require(t)
	for bug, catchers := range catalogue.InfraCatchers {
		t.Run(bug, func(t *testing.T) {
			t.Parallel()
			var red []string
			for _, name := range catchers {
				s, ok := catalogue.LookupInfra(name)
				if !ok {
					t.Fatalf("canary %s: no infrastructure scenario %q", bug, name)
				}
				res := run(t, s, bug)
				t.Logf("%s with %s: pass=%v %.1fs: %s %v", name, bug, res.Pass(), res.Duration.Seconds(), res.Verdict, res.Err)
				if !res.Pass() {
					red = append(red, name)
					break
				}
			}
			if len(red) == 0 {
				t.Errorf("canary %s survived: none of %v went red", bug, catchers)
			}
		})
	}
}

//go:build chaos

package scenarios_test

import (
	"context"
	"testing"

	"github.com/outboxchaos/outboxchaos/audit/audittest"
	"github.com/outboxchaos/outboxchaos/scenarios"
	"github.com/outboxchaos/outboxchaos/scenarios/catalogue"
	"github.com/outboxchaos/outboxchaos/system/canary"
	"github.com/outboxchaos/outboxchaos/system/testenv"
)

// TestAuditAgreesWithFreshRuns: the audit of a fresh run's final tables,
// the fake vendor's ledger as the report and the alerts the sink received
// agrees with the run's own verdict invariant by invariant — on runs that
// keep the contract and on canary runs that break it (a copy sent twice,
// a message lost silently, an alert for a message that arrived, a status
// that says lost for a message that was sent).
func TestAuditAgreesWithFreshRuns(t *testing.T) {
	testenv.Require(t)
	t.Parallel()
	cases := []struct{ name, bug string }{
		{"confirm-timeout", ""},
		{"worker-crash-after-send", ""},
		{"worker-crash-after-send", canary.CheckThenAct},
		{"relay-crash-after-claim", canary.MarkBeforePublish},
		{"rejected-then-sent", canary.AlertOnRetry},
		{"ad-confirmed-before-cutoff", canary.ExpireTaken},
	}
	for _, c := range cases {
		t.Run(c.name+"/"+c.bug, func(t *testing.T) {
			t.Parallel()
			s, ok := catalogue.Lookup(c.name)
			if !ok {
				t.Fatalf("no scenario %s", c.name)
			}
			o := scenarios.DefaultOptions()
			o.PGURL, o.AMQPURL, o.Bin, o.Artifacts, o.Seed, o.Bug = testenv.PGURL(), testenv.AMQPURL(), bin, "", 1, c.bug
			res := scenarios.Run(context.Background(), s, o)
			if res.NotJudged != nil {
				t.Fatalf("not judged: %v", res.NotJudged)
			}
			rec := res.Record
			rec.Verdict = res.Verdict
			compared, broken := audittest.Agree(t, c.name+"/"+c.bug, rec)
			t.Logf("%s with %q: %s; %d invariants compared, %d broken", c.name, c.bug, res.Verdict, compared, broken)
			if compared == 0 || (c.bug != "" && broken == 0) {
				t.Errorf("compared %d invariants, %d broken: a canary run the audit finds nothing in tests nothing", compared, broken)
			}
		})
	}
}

package run

import (
	"slices"
	"testing"

	"github.com/outboxchaos/outboxchaos/system/killpoint"
)

// TestJobRunAgainWithoutFaults: a failed job's run again keeps its
// settings and arguments, none of the variables that armed its faults.
func TestJobRunAgainWithoutFaults(t *testing.T) {
	t.Parallel()
	ps := podSpec{args: []string{"--per-kind", "3"}, env: []string{"OUTBOXCHAOS_BATCH_SIZE=2",
		killpoint.PauseEnvVar + "=job.before-commit:1", killpoint.EnvVar + "=job.after-coupon", killpoint.FailEnvVar + "=x"}}
	got := withoutFaults(ps)
	if !slices.Equal(got.env, []string{"OUTBOXCHAOS_BATCH_SIZE=2"}) || !slices.Equal(got.args, ps.args) {
		t.Fatalf("run again with %+v", got)
	}
}

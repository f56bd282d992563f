package run

import (
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"github.com/outboxchaos/outboxchaos/checker"
)

func TestOutcome(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		r    Result
		want Outcome
	}{
		{Result{}, OutcomePass},
		{Result{Verdict: checker.Verdict{LostSilently: 1}}, OutcomeFail},
		{Result{Err: errors.New("lost visibly: want 1, got 0")}, OutcomeFail},
		// Not judged wins over whatever the counts say: an interrupted run
		// shows rows stuck that nobody let settle.
		{Result{Verdict: checker.Verdict{Stuck: 6}, NotJudged: errors.New("interrupted")}, OutcomeError},
	} {
		if got := c.r.Outcome(); got != c.want || c.r.Pass() != (c.want == OutcomePass) {
			t.Errorf("%+v: %s, want %s", c.r, got, c.want)
		}
	}
	if Worst() != OutcomePass || Worst(OutcomePass, OutcomeError) != OutcomeError || Worst(OutcomeError, OutcomeFail, OutcomePass) != OutcomeFail {
		t.Error("Worst: want FAIL over ERROR over PASS")
	}
}

// TestArtifactsNamedByRelay: the records of one peer case run against
// several relays under one seed each get a folder of their own.
func TestArtifactsNamedByRelay(t *testing.T) {
	dir := t.TempDir()
	var folders []string
	for _, impl := range []string{"", "watermill-queue", "node-relay"} {
		r := Result{Name: "peer-unroutable", Seed: 7, Record: checker.Record{Scenario: "peer-unroutable", Seed: 7, Impl: impl}}
		f, err := WriteArtifacts(dir, r)
		if err != nil {
			t.Fatal(err)
		}
		folders = append(folders, filepath.Base(f))
	}
	want := []string{"peer-unroutable-seed7", "peer-unroutable-watermill-queue-seed7", "peer-unroutable-node-relay-seed7"}
	if !slices.Equal(folders, want) {
		t.Errorf("folders %v, want %v", folders, want)
	}
}

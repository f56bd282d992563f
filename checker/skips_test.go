package checker

import (
	"strings"
	"testing"
)

// TestSkipsJudgedByGroundTruth: a skip counts as intended only when the
// business tables say it was owed: the member withdrew consent or does not
// exist, or the number is unregistered outside production. A pipeline
// that merely says "skipped" is a silent loss otherwise.
func TestSkipsJudgedByGroundTruth(t *testing.T) {
	t.Parallel()
	base := func(status string) State {
		return State{
			Intents:    []string{"GRADE_RENEWAL:1"},
			Outbox:     []OutboxRow{{ID: 1, DedupKey: "GRADE_RENEWAL:1", Status: status, MemberID: 7, Phone: "01000000007"}},
			Registered: []string{"01000000007"},
			Settled:    true,
		}
	}
	workerSkip := func(s State) State { s.WorkerSkips = []string{"notification-outbox-1"}; return s }
	for _, tc := range []struct {
		name   string
		state  State
		silent bool
	}{
		{"consent withdrawn", func() State { s := base("SKIPPED"); s.Consent = map[int64]bool{7: false}; return s }(), false},
		{"member gone", func() State { s := base("SKIPPED"); s.Consent = map[int64]bool{}; s.Consent[8] = true; return s }(), false},
		{"unregistered outside production", func() State {
			s := base("SKIPPED")
			s.Consent, s.Registered = map[int64]bool{7: true}, nil
			return s
		}(), false},
		{"consenting and registered", func() State { s := base("SKIPPED"); s.Consent = map[int64]bool{7: true}; return s }(), true},
		{"worker skip of a consenting member", func() State {
			s := workerSkip(base("PUBLISHED"))
			s.Consent = map[int64]bool{7: true}
			return s
		}(), true},
		{"worker skip after a withdrawal", func() State {
			s := workerSkip(base("PUBLISHED"))
			s.Consent = map[int64]bool{7: false}
			return s
		}(), false},
		{"no ground truth recorded: taken on trust", base("SKIPPED"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Check(tc.state)
			if got := v.LostSilently == 1; got != tc.silent {
				t.Fatalf("lost silently %d, skipped %d; want silent loss: %v (%v)", v.LostSilently, v.Skipped, tc.silent, v.Details)
			}
			if tc.silent && !strings.Contains(v.Explain(), "consents") {
				t.Fatalf("details %q do not say why the skip was owed", v.Explain())
			}
			if !tc.silent && v.Skipped != 1 {
				t.Fatalf("skipped %d, want 1 (%v)", v.Skipped, v.Details)
			}
		})
	}
}

// TestConsentCanaryCaughtOnlyByGroundTruth: the recorded run of canary
// consent-first-only breaks the contract only because the checker asks
// the members table; taking the pipeline's skips on trust, it passes.
func TestConsentCanaryCaughtOnlyByGroundTruth(t *testing.T) {
	t.Parallel()
	rec := loadRun(t, "consent-withdrawn-seed84961-consent-first-only")
	if v := Judge(rec.History, rec.Faults, rec.State); v.OK() || v.LostSilently != 1 {
		t.Fatalf("with the members table: %s, want one silent loss", v)
	}
	rec.State.Consent = nil
	if v := Judge(rec.History, rec.Faults, rec.State); !v.OK() {
		t.Fatalf("skips taken on trust: %s, want the canary to pass", v)
	}
}

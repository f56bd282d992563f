package checker

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// onlyBroken fails t unless name is the one invariant rec breaks.
func onlyBroken(t *testing.T, rec Record, name string) {
	t.Helper()
	v := Judge(rec.History, rec.Faults, rec.State)
	if got := v.Broken(); !slices.Equal(got, []string{name}) || v.OK() {
		t.Fatalf("broken %v (%s), want only %s", got, v, name)
	}
}

// TestInvariantFixtures: every registered invariant has a recorded run (or
// a hand-written state) it goes red on; the registry and this table are
// kept in step.
func TestInvariantFixtures(t *testing.T) {
	t.Parallel()
	runs := map[string]string{
		"nothing-twice":         "crashpoint-one-worker-http-vendor-message-after-1-seed1-check-then-act",
		"nothing-lost-silently": "claim-response-lost-seed650260-no-cleanup-alert",
		"nothing-stuck":         "state:stuck.json",
		"settled":               "crashpoint-one-relay-amqp-publish-send-before-1-seed1-mark-before-publish",
		"nothing-unexpected":    "state:unexpected.json",
		"settlements-agree":     "late-landing-no-resend-seed235651-trust-first-answer",
		"alert-contract":        "delivery-limit-outage-seed561068-before-fix",
		"backoff":               "backoff-schedule-seed650027-flat-backoff",
		"republish-bound":       "unroutable-mid-batch-seed105606-all-or-nothing",
		"claim-order":           "backlog-oldest-first-seed782857-newest-first",
		"right-intents":         "business-events-once-seed101800-double-enqueue",
		"right-time":            "ad-send-cutoff-seed390217-ad-hours-utc",
		"right-person":          "consent-withdrawn-seed560171-consent-at-relay-only",
		"true-alerts":           "rejected-then-sent-seed161476-alert-on-retry",
		"statuses-agree":        "ad-confirmed-before-cutoff-seed71675-before-fix",
	}
	seen := map[string]bool{}
	for _, inv := range Invariants {
		if seen[inv.Name] {
			t.Errorf("invariant %s registered twice", inv.Name)
		}
		seen[inv.Name] = true
		if inv.Doc == "" || inv.Check == nil {
			t.Errorf("invariant %s has no doc or no check", inv.Name)
		}
		fixture, ok := runs[inv.Name]
		if !ok {
			t.Errorf("invariant %s has no fixture it goes red on", inv.Name)
			continue
		}
		rec := loadFixture(t, fixture)
		v := Judge(rec.History, rec.Faults, rec.State)
		if !slices.Contains(v.Broken(), inv.Name) || v.OK() {
			t.Errorf("invariant %s holds on %s: %s", inv.Name, fixture, v)
		}
	}
	for name := range runs {
		if !seen[name] {
			t.Errorf("fixture for %s, which is not registered", name)
		}
	}
}

// TestOKIsEveryInvariant: a verdict holds exactly when every invariant
// does, and a verdict recorded without invariants by its counts.
func TestOKIsEveryInvariant(t *testing.T) {
	t.Parallel()
	v := Check(State{Settled: true})
	if !v.OK() || len(v.Invariants) != len(Invariants) {
		t.Fatalf("an empty settled run: %s, %d results", v, len(v.Invariants))
	}
	v.Invariants[len(v.Invariants)-1].Valid = false
	if v.OK() {
		t.Error("one invalid invariant must break the verdict")
	}
	if !(Verdict{Intents: 1, DeliveredOnce: 1}).OK() || (Verdict{Intents: 1, Stuck: 1}).OK() {
		t.Error("a verdict recorded without invariants is judged by its counts")
	}
}

// loadFixture reads a recorded run (testdata/runs/NAME) or, as
// "state:FILE", the state of a hand-written case in testdata/states.
func loadFixture(t *testing.T, name string) Record {
	t.Helper()
	file, ok := strings.CutPrefix(name, "state:")
	if !ok {
		return loadRun(t, name)
	}
	raw, err := os.ReadFile(filepath.Join("testdata", "states", file))
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		State State `json:"state"`
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatalf("decode %s: %v", file, err)
	}
	return Record{State: c.State}
}

// TestHarnessDocNamesInvariants: docs/harness.md names every invariant.
func TestHarnessDocNamesInvariants(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join("..", "docs", "harness.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, inv := range Invariants {
		if !strings.Contains(string(raw), "`"+inv.Name+"`") {
			t.Errorf("docs/harness.md does not name invariant `%s`", inv.Name)
		}
	}
}

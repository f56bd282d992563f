package checker

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestRecordedRuns recomputes the verdict of whole recorded runs
// (testdata/runs/*/run.json: history, faults, final state and the
// scenario's rules), most of them saved from real failing runs — a canary
// the harness caught. Each must get the verdict and failure it was
// recorded with. To add one, copy a failing run's folder from artifacts/runs/.
func TestRecordedRuns(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("testdata", "runs", "*", "run.json"))
	if err != nil || len(files) < 3 {
		t.Fatalf("want at least three recorded runs, found %d (%v)", len(files), err)
	}
	failing := 0
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var rec Record
		if err := json.Unmarshal(raw, &rec); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		v, err := Verify(rec)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if !reflect.DeepEqual(v, rec.Verdict) {
			t.Errorf("%s: verdict\n got: %s %v\nwant: %s %v", f, v, v.Details, rec.Verdict, rec.Verdict.Details)
		}
		if got != rec.Failure {
			t.Errorf("%s: failure\n got: %q\nwant: %q", f, got, rec.Failure)
		}
		if rec.Failure != "" || !rec.Verdict.OK() {
			failing++
		}
	}
	// The reconciler's canary: settling on the first answer shows as a
	// re-send that reached the phone twice, and as a FAILED settlement of a
	// message that did reach it.
	for dir, want := range map[string]func(Verdict) bool{
		"late-landing-seed235651-trust-first-answer":           func(v Verdict) bool { return v.Duplicated == 1 && v.Resent == 1 },
		"late-landing-no-resend-seed235651-trust-first-answer": func(v Verdict) bool { return v.Misreconciled == 1 && !v.OK() },
	} {
		rec := loadRun(t, dir)
		if v := Judge(rec.History, rec.Faults, rec.State); !want(v) {
			t.Errorf("%s: verdict %s", dir, v)
		}
	}
	if failing < 3 {
		t.Errorf("want at least three failing runs among the fixtures, found %d", failing)
	}
}

// TestRulesCatchTheirBug: each row-specific rule fails on the recorded run
// of the canary it exists for, and only its own expectations are needed.
func TestRulesCatchTheirBug(t *testing.T) {
	t.Parallel()
	for dir, rule := range map[string]Rule{
		"stale-relay-seed650260-no-claimed-by":                  {Rule: "late-mark", Pod: "relay-1"},
		"worker-shutdown-mid-send-seed650260-release-on-cancel": {Rule: "alerts", Kind: AlertVendorUnknown, N: 1},
		"vendor-5xx-seed650260-retry-unknown":                   {Rule: "vendor-calls", Msg: 1, N: 1},
		"report-disagrees-seed235651-trust-first-answer":        {Rule: "settled", Status: SettledSent, N: 1},
		"poison-messages-seed262525-park-without-reason":        {Rule: "parked", N: 5},
	} {
		rec := loadRun(t, dir)
		if err := rule.Eval(rec, Judge(rec.History, rec.Faults, rec.State)); err == nil {
			t.Errorf("%s: rule %s passed on the canary's run", dir, rule.Rule)
		}
	}
}

// loadRun reads the recorded run in testdata/runs/dir.
func loadRun(t *testing.T, dir string) Record {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "runs", dir, "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rec Record
	if err := json.Unmarshal(raw, &rec); err != nil {
		t.Fatal(err)
	}
	return rec
}

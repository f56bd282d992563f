package checker

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/outboxchaos/outboxchaos/history"
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
	failing, named := 0, 0
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
		for _, d := range diffVerdict(rec.Verdict, v) {
			t.Errorf("%s: %s", f, d)
		}
		if got != rec.Failure {
			t.Errorf("%s: failure\n got: %q\nwant: %q", f, got, rec.Failure)
		}
		if rec.Failure != "" || !rec.Verdict.OK() {
			failing++
		}
		if len(rec.Verdict.Invariants) > 0 {
			named++
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
	if named == 0 {
		t.Error("no recorded run lists its invariants: the per-invariant comparison is untested")
	}
	if failing < 3 {
		t.Errorf("want at least three failing runs among the fixtures, found %d", failing)
	}
}

// diffVerdict compares a recomputed verdict with the one recorded, per
// invariant as far as the record allows: a record that lists invariants is
// compared result by result; an older one by the count each invariant adds
// to (two invariants may share one: settled and nothing-stuck both count
// stuck). Then every count and detail must match; details as a multiset,
// since they follow the registry's order now and followed the intents'
// before.
func diffVerdict(want, got Verdict) []string {
	var out []string
	if len(want.Invariants) > 0 {
		recorded := map[string]Result{}
		for _, r := range want.Invariants {
			recorded[r.Name] = r
		}
		for _, r := range got.Invariants {
			w, ok := recorded[r.Name]
			switch {
			case !ok && !r.Valid:
				out = append(out, fmt.Sprintf("invariant %s (not in the record) is broken %d times", r.Name, r.Violations))
			case ok && (w.Valid != r.Valid || w.Violations != r.Violations):
				out = append(out, fmt.Sprintf("invariant %s: valid=%v with %d violations, recorded valid=%v with %d",
					r.Name, r.Valid, r.Violations, w.Valid, w.Violations))
			}
		}
	} else {
		sums, names := map[*int]int{}, map[*int][]string{}
		for _, r := range got.Invariants {
			inv, ok := invariant(r.Name)
			switch {
			case ok && inv.Counter != nil:
				c := inv.Counter(&want)
				sums[c] += r.Violations
				names[c] = append(names[c], r.Name)
			case !r.Valid:
				out = append(out, fmt.Sprintf("invariant %s (not in the record) is broken %d times", r.Name, r.Violations))
			}
		}
		for c, n := range sums {
			if n != *c {
				out = append(out, fmt.Sprintf("invariants %v: %d violations, recorded %d", names[c], n, *c))
			}
		}
	}
	norm := func(v Verdict) Verdict {
		v.Invariants = nil
		v.Details = slices.Sorted(slices.Values(v.Details))
		return v
	}
	if w, g := norm(want), norm(got); !reflect.DeepEqual(w, g) {
		out = append(out, fmt.Sprintf("verdict\n got: %s %q\nwant: %s %q", g, g.Details, w, w.Details))
	}
	return out
}

// TestDiffVerdict: the comparison of recorded runs can fail, on a count
// and on an invariant's result.
func TestDiffVerdict(t *testing.T) {
	t.Parallel()
	rec := loadRun(t, "backoff-schedule-seed650027-flat-backoff")
	v := Judge(rec.History, rec.Faults, rec.State)
	if d := diffVerdict(rec.Verdict, v); len(d) != 0 {
		t.Fatalf("the record itself: %q", d)
	}
	old := rec.Verdict
	old.BackoffBroken = 1
	if d := diffVerdict(old, v); len(d) == 0 || !strings.Contains(d[0], "[backoff]") {
		t.Errorf("a count that differs: %q", d)
	}
	listed := v
	listed.Invariants = slices.Clone(v.Invariants)
	for i := range listed.Invariants {
		if listed.Invariants[i].Name == "backoff" {
			listed.Invariants[i].Valid, listed.Invariants[i].Violations = true, 0
		}
	}
	if d := diffVerdict(listed, v); len(d) == 0 || !strings.Contains(d[0], "invariant backoff") {
		t.Errorf("an invariant result that differs: %q", d)
	}
}

// TestRulesCatchTheirBug: each row-specific rule fails on the recorded run
// of the canary it exists for, and only its own expectations are needed.
func TestRulesCatchTheirBug(t *testing.T) {
	t.Parallel()
	for dir, rule := range map[string]Rule{
		"stale-relay-seed650260-no-claimed-by":                  {Rule: "late-mark", Pod: "relay-1"},
		"worker-shutdown-mid-send-seed650260-release-on-cancel": {Rule: "alerts", Kind: history.AlertVendorUnknown, N: 1},
		"vendor-5xx-seed650260-retry-unknown":                   {Rule: "vendor-calls", Msg: 1, N: 1},
		"report-disagrees-seed235651-trust-first-answer":        {Rule: "settled", Status: history.SettledSent, N: 1},
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

// TestAuditorCanariesCaughtAlone: the recorded run of each auditor
// invariant's canary breaks that invariant and no other: what each
// changes (what was sent, when, to whom, what an alert said) no count of
// deliveries sees.
func TestAuditorCanariesCaughtAlone(t *testing.T) {
	t.Parallel()
	for dir, want := range map[string]string{
		"business-events-once-seed101800-double-enqueue":     "right-intents",
		"ad-send-cutoff-seed390217-ad-hours-utc":             "right-time",
		"consent-withdrawn-seed560171-consent-at-relay-only": "right-person",
		"rejected-then-sent-seed161476-alert-on-retry":       "true-alerts",
		"ad-confirmed-before-cutoff-seed788335-expire-taken": "statuses-agree",
	} {
		rec := loadRun(t, dir)
		v := Judge(rec.History, rec.Faults, rec.State)
		var broken []string
		for _, r := range v.Invariants {
			if !r.Valid {
				broken = append(broken, r.Name)
			}
		}
		if !slices.Equal(broken, []string{want}) {
			t.Errorf("%s: broken %v, want %s alone", dir, broken, want)
		}
	}
}

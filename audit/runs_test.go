package audit_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/outboxchaos/outboxchaos/audit/audittest"
	"github.com/outboxchaos/outboxchaos/checker"
)

// The audit of each recorded run's final tables, report and alerts
// (checker/testdata/runs) agrees with the run's verdict invariant by
// invariant: every invariant both judge finds the same violations, save
// those whose inputs the audit does not read (audittest.Unseen). The verdict is
// the recorded one where the record lists its invariants, else the
// checker's recomputation (which TestRecordedRuns ties to the recorded
// counts).
func TestAuditAgreesWithRecordedRuns(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("..", "checker", "testdata", "runs", "*", "run.json"))
	if err != nil || len(files) < 3 {
		t.Fatalf("want recorded runs, found %d (%v)", len(files), err)
	}
	compared, broken := 0, 0
	for _, f := range files {
		name := filepath.Base(filepath.Dir(f))
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var rec checker.Record
		if err := json.Unmarshal(raw, &rec); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		c, b := audittest.Agree(t, name, rec)
		compared, broken = compared+c, broken+b
	}
	if compared == 0 || broken == 0 {
		t.Errorf("compared %d invariants, %d broken: the agreement is untested", compared, broken)
	}
}

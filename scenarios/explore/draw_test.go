package explore

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReplayOldFailfiles: the failfiles rapid saved before Generate drew
// more (their bitstreams are "no longer valid") still give their schedules,
// read from the draws they logged.
func TestReplayOldFailfiles(t *testing.T) {
	t.Parallel()
	want := map[string]string{
		"TestProperty-20261130071745-20697.fail": "2×[GRADE_RENEWAL,MONTHLY_AWARDS_WINNING,MONTHLY_AWARDS_CLOSING] jobs=1 relays=1 drain=false workers=1 start=10:00:00 " +
			"faults=[vendor token-fail ×2; down postgres at +8ms for 408ms; down rabbitmq-worker at +67ms for 527ms; kill-point job.before-commit:1 in job]",
		"TestProperty-20261130231403-29751.fail": "2×[GRADE_RENEWAL,MONTHLY_AWARDS_WINNING,MONTHLY_AWARDS_CLOSING,MISSION_PARTICIPATION_REMINDER,GRADE_LOCK_IN] jobs=2 relays=2 drain=true workers=2 start=20:39:58 " +
			"faults=[down postgres at +63ms for 100ms; clock at +1d 10:00 in every relay; kill-point job.before-commit:1 in job]",
	}
	files, _ := filepath.Glob(filepath.Join("..", "testdata", "rapid", "TestProperty", "*.fail"))
	if len(files) < len(want) {
		t.Fatalf("want the saved failfiles, found %v", files)
	}
	for _, f := range files {
		s, err := ReplayFailfile(f)
		if err != nil {
			t.Fatal(err)
		}
		if w, ok := want[filepath.Base(f)]; ok && s.String() != w {
			t.Errorf("%s:\n got %s\nwant %s", f, s, w)
		}
		if err := s.Scenario("replay").Validate(); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// TestScriptDrawRejectsAMisfit: a recording whose draws Generate does not
// make is an error, not a different schedule.
func TestScriptDrawRejectsAMisfit(t *testing.T) {
	t.Parallel()
	old, err := os.ReadFile(filepath.Join("..", "testdata", "rapid", "TestProperty", "TestProperty-20261130231403-29751.fail"))
	if err != nil {
		t.Fatal(err)
	}
	for name, rec := range map[string]string{
		"unknown label": "[rapid] draw per_kind: 2\n[rapid] draw something else: 1\n",
		"out of range":  "[rapid] draw per_kind: 9\n",
		"left over":     string(old) + "# [TestProperty] [rapid] draw a choice Generate never makes: 1\n",
	} {
		d, err := readFailfile(strings.NewReader(rec))
		if err != nil {
			t.Fatal(err)
		}
		Generate(d)
		if d.Err() == nil {
			t.Errorf("%s: the recording fitted", name)
		}
	}
}

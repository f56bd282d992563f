package explore

import (
	"math/rand"
	"slices"
	"testing"
	"time"

	"github.com/outboxchaos/outboxchaos/auditor"
	"github.com/outboxchaos/outboxchaos/faults"
	"github.com/outboxchaos/outboxchaos/scenarios"
)

// Random schedules reach the shapes the auditor judges: starts by a
// rule's turn, consent withdrawn in flight, and a member with two grade
// histories in the month, whose rows the harness then seeds.
func TestScheduleDrawsAuditShapes(t *testing.T) {
	var byRule, withdrawn, twoGrades int
	for seed := int64(1); seed <= 300; seed++ {
		s := Generate(RandDraw{R: rand.New(rand.NewSource(seed))})
		for _, r := range ruleTimes {
			if len(s.Start) >= 5 && (s.Start[:5] == r.at[:5] || len(r.at) > 8 && len(s.Start) > 10 && s.Start[:10] == r.at[:10]) {
				byRule++
				break
			}
		}
		if slices.ContainsFunc(s.Faults, func(f Timed) bool { return f.Kind == "withdraw-consent" && f.When == WhenConsuming }) {
			withdrawn++
		}
		if s.Business == nil {
			continue
		}
		twoGrades++
		sc := s.Scenario("x")
		if sc.Business != s.Business {
			t.Fatalf("seed %d: the scenario does not carry the schedule's business shape", seed)
		}
		now := time.Date(2026, 12, 5, 10, 0, 0, 0, auditor.Seoul)
		b := scenarios.BusinessRows(now, s.PerKind, nil)
		before := len(b.GradeHistories)
		sc.Business.Apply(&b, now, s.PerKind, nil)
		if got := len(b.GradeHistories) - before; got != len(s.Business.SecondGrade) {
			t.Fatalf("seed %d: %s added %d grade histories, want %d", seed, s.Business, got, len(s.Business.SecondGrade))
		}
		seen := map[int64]bool{}
		for _, g := range b.GradeHistories {
			if seen[g.ID] {
				t.Fatalf("seed %d: grade history id %d twice", seed, g.ID)
			}
			seen[g.ID] = true
		}
		c := scenarios.BusinessRows(now, s.PerKind, []string{auditor.GradeLockIn})
		n := len(c.GradeHistories)
		sc.Business.Apply(&c, now, s.PerKind, []string{auditor.GradeLockIn})
		if len(c.GradeHistories) != n {
			t.Fatalf("seed %d: a job run without grade renewals was given grade histories", seed)
		}
	}
	if byRule == 0 || withdrawn == 0 || twoGrades == 0 {
		t.Fatalf("in 300 schedules: %d start by a rule, %d withdraw consent in flight, %d seed a second grade history; want each", byRule, withdrawn, twoGrades)
	}
	t.Logf("in 300 schedules: %d start by a rule, %d withdraw consent in flight, %d seed a second grade history", byRule, withdrawn, twoGrades)
}

// A pause sized by a deadline is also continued once every window is
// over: its thaw gives up when it sees the run quiescent before the pod
// froze, and a pod that froze after that would hold its work to the end.
func TestPausedPodContinuedAtTheEnd(t *testing.T) {
	s := Schedule{PerKind: 1, JobRuns: 1, Workers: 1, Relays: 1, Faults: []Timed{
		{Spec: faults.Spec{Kind: "pause-point", Point: "worker.after-park", Hit: 1}, When: WhenArmed, Role: "worker"},
		{Spec: faults.Spec{Pod: "worker-1"}, When: WhenPaused, For: faults.Duration(time.Second)},
	}}
	steps := s.Scenario("x").Steps
	last := steps[len(steps)-1]
	if last.Do != "inject" || !slices.ContainsFunc(last.Faults, func(f faults.Spec) bool { return f.Kind == "resume" && f.Pod == "worker-1" }) {
		t.Fatalf("last step %s, want worker-1 continued", last)
	}
}

// A pause drawn for a role the schedule runs none of is not continued at
// the end: there is no such pod.
func TestPauseOfAnAbsentRoleNotContinued(t *testing.T) {
	s := Schedule{PerKind: 1, JobRuns: 1, Workers: 1, Relays: 1, Faults: []Timed{
		{Spec: faults.Spec{Kind: "pause-point", Point: "reconcile.before-settle", Hit: 1}, When: WhenArmed, Role: "reconciler"},
		{Spec: faults.Spec{Pod: "reconciler-1"}, When: WhenPaused, For: faults.Duration(time.Second)},
	}}
	for _, st := range s.Scenario("x").Steps {
		if st.Do == "inject" && slices.ContainsFunc(st.Faults, func(f faults.Spec) bool { return f.Kind == "resume" && f.Pod == "reconciler-1" }) {
			t.Fatalf("step %s continues a reconciler the schedule never starts", st)
		}
	}
}

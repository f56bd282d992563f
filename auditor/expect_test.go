package auditor

import (
	"testing"
	"time"
)

func seoul(s string) time.Time {
	t, err := time.ParseInLocation("2006-01-02 15:04", s, Seoul)
	if err != nil {
		panic(err)
	}
	return t
}

// TestExpectByKeyTable: the auditor owes one notification per business
// event under the design's key, on the job's Seoul day; a job run again
// owes nothing new; a target of another day or month owes nothing.
func TestExpectByKeyTable(t *testing.T) {
	t.Parallel()
	r := Record{
		Business: Business{
			Members:        []Member{{ID: 7, Phone: "01000000007", Consent: true, Active: true}},
			GradeHistories: []GradeHistory{{ID: 101, MemberID: 7, Month: "2026-12"}, {ID: 102, MemberID: 7, Month: "2026-12"}, {ID: 103, MemberID: 99}},
			AwardWinnings:  []AwardWinning{{ID: 5, MemberID: 7, Deadline: "2026-12-08"}},
			MissionTargets: []DayTarget{{Day: "2026-12-05", MemberID: 7}, {Day: "2026-12-06", MemberID: 7}},
			LockInTargets:  []MonthTarget{{Month: "2026-12", MemberID: 7}, {Month: "2027-01", MemberID: 7}},
			Anniversaries:  []YearTarget{{MemberID: 7, Year: 2026}},
		},
		Jobs: []JobRun{{Time: seoul("2026-12-05 10:00")}, {Time: seoul("2026-12-05 11:00")}},
	}
	got := map[string]Notification{}
	for _, n := range Expect(r) {
		if _, dup := got[n.Key]; dup {
			t.Errorf("owed twice: %s", n.Key)
		}
		got[n.Key] = n
	}
	for _, k := range []string{"GRADE_RENEWAL:101", "GRADE_RENEWAL:102", "MONTHLY_AWARDS_WINNING:5", "MONTHLY_AWARDS_CLOSING:5:2026-12-08",
		"MISSION_PARTICIPATION_REMINDER:2026-12-05:7", "GRADE_LOCK_IN:2026-12:7", "ANNIVERSARY_COUPON:"} {
		n, ok := got[k]
		if !ok {
			t.Errorf("not owed: %s", k)
			continue
		}
		if n.Member != 7 || n.Phone != "01000000007" || n.Date != "2026-12-05" {
			t.Errorf("%s: member %d phone %s date %s", k, n.Member, n.Phone, n.Date)
		}
	}
	if len(got) != 7 {
		t.Errorf("owed %d notifications, want 7: %v", len(got), got)
	}
	if !got["ANNIVERSARY_COUPON:"].Matches("ANNIVERSARY_COUPON:12") || got["ANNIVERSARY_COUPON:"].Matches("ANNIVERSARY_COUPON:x") {
		t.Error("a coupon's key is the prefix and a coupon id")
	}
	if !got["MISSION_PARTICIPATION_REMINDER:2026-12-05:7"].Advertising() || got["GRADE_RENEWAL:101"].Advertising() {
		t.Error("advertising kinds")
	}
}

// TestExpectOnlyTheJobsKinds: a job run for some kinds owes only those.
func TestExpectOnlyTheJobsKinds(t *testing.T) {
	t.Parallel()
	r := Record{
		Business: Business{Members: []Member{{ID: 1, Phone: "p"}}, GradeHistories: []GradeHistory{{ID: 1, MemberID: 1}},
			AwardWinnings: []AwardWinning{{ID: 1, MemberID: 1, Deadline: "2026-12-08"}}},
		Jobs: []JobRun{{Time: seoul("2026-12-05 10:00"), Kinds: []string{AwardsWinning}}},
	}
	got := Expect(r)
	if len(got) != 1 || got[0].Key != "MONTHLY_AWARDS_WINNING:1" {
		t.Errorf("got %v", got)
	}
	if Expect(Record{Business: r.Business}) != nil {
		t.Error("no job run owes nothing")
	}
}

// TestHours: the advertising hours, at their edges.
func TestHours(t *testing.T) {
	t.Parallel()
	h := Hours{PublishCutoff: 20*60 + 40, Resume: 8 * 60, SendFrom: 8 * 60, SendUntil: 20*60 + 50}
	for _, c := range []struct {
		at            string
		send, publish bool
	}{
		{"2026-12-05 07:59", false, false},
		{"2026-12-05 08:00", true, true},
		{"2026-12-05 20:39", true, true},
		{"2026-12-05 20:40", true, false},
		{"2026-12-05 20:49", true, false},
		{"2026-12-05 20:50", false, false},
		{"2026-12-05 23:59", false, false},
	} {
		at := seoul(c.at)
		if h.MaySend(at) != c.send || h.MayPublish(at) != c.publish {
			t.Errorf("%s: may send %v publish %v, want %v %v", c.at, h.MaySend(at), h.MayPublish(at), c.send, c.publish)
		}
	}
	// The hours are Seoul's whatever zone the time is read in.
	if !h.MaySend(seoul("2026-12-05 10:00").UTC()) {
		t.Error("a UTC reading of 10:00 Seoul")
	}
}

// TestWithdrawnAndSkewed: the harness's timeline, asked.
func TestWithdrawnAndSkewed(t *testing.T) {
	t.Parallel()
	r := Record{Withdrawals: []Withdrawal{{At: time.Second, Member: 3}, {At: 2 * time.Second, Member: 3}}, Skewed: []string{"relay-1"}}
	if w, ok := r.Withdrawn(3); !ok || w.At != time.Second {
		t.Errorf("withdrawn: %v %v", w, ok)
	}
	if _, ok := r.Withdrawn(4); ok {
		t.Error("member 4 never withdrew")
	}
	if !r.IsSkewed("relay-1") || r.IsSkewed("relay-2") {
		t.Error("skewed pods")
	}
}

// A job run that spanned midnight in Seoul (and here a month's end) may
// have taken either day: what both days call for is owed for certain,
// what only one does is optional; a later run on one of the days owes
// its notifications for certain again.
func TestExpectJobAcrossMidnight(t *testing.T) {
	t.Parallel()
	b := Business{
		Members:        []Member{{ID: 7, Phone: "01000000007", Consent: true, Active: true}},
		GradeHistories: []GradeHistory{{ID: 101, MemberID: 7, Month: "2026-12"}},
		MissionTargets: []DayTarget{{Day: "2026-12-31", MemberID: 7}, {Day: "2027-01-01", MemberID: 7}},
		LockInTargets:  []MonthTarget{{Month: "2026-12", MemberID: 7}},
	}
	across := JobRun{Time: seoul("2026-12-31 23:59").Add(59 * time.Second), End: seoul("2027-01-01 00:00").Add(time.Second)}
	optional := func(r Record) map[string]bool {
		out := map[string]bool{}
		for _, n := range Expect(r) {
			out[n.Key] = n.Optional
		}
		return out
	}
	got := optional(Record{Business: b, Jobs: []JobRun{across}})
	want := map[string]bool{"GRADE_RENEWAL:101": false, "MISSION_PARTICIPATION_REMINDER:2026-12-31:7": true,
		"MISSION_PARTICIPATION_REMINDER:2027-01-01:7": true, "GRADE_LOCK_IN:2026-12:7": true}
	if len(got) != len(want) {
		t.Fatalf("owed %v, want %v", got, want)
	}
	for k, opt := range want {
		if o, ok := got[k]; !ok || o != opt {
			t.Errorf("%s: owed %v, optional %v; want owed, optional %v", k, ok, o, opt)
		}
	}
	same := across
	same.End = same.Time.Add(time.Millisecond)
	later := JobRun{Time: seoul("2027-01-01 10:00")}
	got = optional(Record{Business: b, Jobs: []JobRun{across, later}})
	if got["MISSION_PARTICIPATION_REMINDER:2027-01-01:7"] || !got["MISSION_PARTICIPATION_REMINDER:2026-12-31:7"] {
		t.Errorf("after a run on 2027-01-01: %v, want its reminder certain and the other day's optional", got)
	}
	got = optional(Record{Business: b, Jobs: []JobRun{same}})
	for k, o := range got {
		if o {
			t.Errorf("a run that ended on its own day owes %s optionally", k)
		}
	}
}

// A job run that failed owes its notifications optionally: a run that
// completes owes them for certain.
func TestExpectFailedJob(t *testing.T) {
	t.Parallel()
	b := Business{
		Members:        []Member{{ID: 7, Phone: "01000000007", Consent: true, Active: true}},
		MissionTargets: []DayTarget{{Day: "2026-12-05", MemberID: 7}},
	}
	failed := JobRun{Time: seoul("2026-12-05 10:00"), Failed: true}
	n := Expect(Record{Business: b, Jobs: []JobRun{failed}})
	if len(n) != 1 || !n[0].Optional {
		t.Fatalf("a failed run owes %+v, want its reminder optionally", n)
	}
	n = Expect(Record{Business: b, Jobs: []JobRun{failed, {Time: seoul("2026-12-05 10:01")}}})
	if len(n) != 1 || n[0].Optional {
		t.Fatalf("a failed run and a completed one owe %+v, want the reminder for certain", n)
	}
}

// TestExpectOnlyRowsSeededBefore: a job run owes nothing for the rows a
// later run seeded, even on its own day; the later run owes them (here it
// failed, so optionally).
func TestExpectOnlyRowsSeededBefore(t *testing.T) {
	t.Parallel()
	sec := time.Second
	r := Record{
		Business: Business{
			Members: []Member{{ID: 1, Phone: "01000000001"}, {ID: 2, Phone: "01000000002"}},
			MissionTargets: []DayTarget{{Day: "2026-12-06", MemberID: 1, Seeding: Seeding{Seeded: sec}},
				{Day: "2026-12-06", MemberID: 2, Seeding: Seeding{Seeded: 3 * sec}}},
		},
		Jobs: []JobRun{{At: 2 * sec, Time: seoul("2026-12-06 23:59")},
			{At: 4 * sec, Time: seoul("2026-12-06 23:59"), End: seoul("2026-12-07 00:01"), Failed: true}},
	}
	got := map[string]bool{}
	for _, n := range Expect(r) {
		got[n.Key] = n.Optional
	}
	if opt, ok := got["MISSION_PARTICIPATION_REMINDER:2026-12-06:1"]; !ok || opt {
		t.Errorf("member 1's reminder: owed %v, optional %v; want owed for certain by the first run", ok, opt)
	}
	if opt, ok := got["MISSION_PARTICIPATION_REMINDER:2026-12-06:2"]; !ok || !opt {
		t.Errorf("member 2's reminder: owed %v, optional %v; want owed optionally, by the failed later run alone", ok, opt)
	}
}

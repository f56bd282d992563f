package checker

import (
	"testing"
	"time"

	"github.com/outboxchaos/outboxchaos/auditor"
	"github.com/outboxchaos/outboxchaos/history"
)

// The hand-built runs the auditor invariants' tests share: one member,
// one grade renewal, the design's hours, a job at 10:00 Seoul.

var auditDay = time.Date(2026, 12, 5, 10, 0, 0, 0, auditor.Seoul)

func auditRecord() *auditor.Record {
	return &auditor.Record{
		Hours: auditor.Hours{PublishCutoff: 20*60 + 40, Resume: 8 * 60, SendFrom: 8 * 60, SendUntil: 20*60 + 50},
		Business: auditor.Business{
			Members:        []auditor.Member{{ID: 1, Phone: "01000000001", Consent: true, Active: true}},
			Registered:     []string{"01000000001"},
			GradeHistories: []auditor.GradeHistory{{ID: 7001, MemberID: 1, Month: "2026-12"}},
			MissionTargets: []auditor.DayTarget{{Day: "2026-12-05", MemberID: 1}},
		},
		Jobs: []auditor.JobRun{{Time: auditDay, Kinds: []string{auditor.GradeRenewal}}},
	}
}

// auditState is the happy end of auditRecord's run: the renewal sent
// once at 10:00:01.
func auditState() State {
	return State{
		Settled:    true,
		Harness:    auditRecord(),
		Registered: []string{"01000000001"},
		Outbox:     []OutboxRow{{ID: 1, DedupKey: "GRADE_RENEWAL:7001", Kind: auditor.GradeRenewal, Status: "PUBLISHED", MemberID: 1, Phone: "01000000001"}},
		Inbox:      []InboxRow{{MessageID: MessageID(1), OutboxID: 1, DedupKey: "GRADE_RENEWAL:7001", Status: "SENT"}},
		Ledger:     []HandsetEntry{{RefKey: MessageID(1), Phone: "01000000001", At: auditDay.Add(time.Second)}},
	}
}

// adState is a mission reminder (advertising) sent once at at.
func adState(at time.Time) State {
	s := auditState()
	s.Harness.Jobs[0].Kinds = []string{auditor.MissionRemind}
	key := "MISSION_PARTICIPATION_REMINDER:2026-12-05:1"
	s.Outbox[0].DedupKey, s.Outbox[0].Kind = key, auditor.MissionRemind
	s.Inbox[0].DedupKey = key
	s.Ledger[0].At = at
	return s
}

func ev(at time.Duration, pod, name string, attrs map[string]any) history.Event {
	return history.Event{At: at, Pod: pod, Name: name, Attrs: attrs}
}

// A notification owed only on the day a job that spanned midnight did not
// take is neither an intent nor missing; the one it did take is expected
// and no extra row.
func TestAuditOptionalAcrossMidnight(t *testing.T) {
	t.Parallel()
	s := adState(auditDay.Add(time.Second))
	eve := time.Date(2026, 12, 4, 23, 59, 59, 0, auditor.Seoul)
	s.Harness.Jobs[0].Time, s.Harness.Jobs[0].End = eve, eve.Add(2*time.Second)
	s.Harness.Business.MissionTargets = append(s.Harness.Business.MissionTargets, auditor.DayTarget{Day: "2026-12-04", MemberID: 1})
	a := NewAudit(s)
	if len(a.Extra) != 0 {
		t.Fatalf("extra rows %v, want none", a.Extra)
	}
	if got := a.Intents(); len(got) != 1 || got[0] != "MISSION_PARTICIPATION_REMINDER:2026-12-05:1" {
		t.Fatalf("intents %v, want only the day the job took", got)
	}
	if v := Check(s); !v.OK() {
		t.Fatalf("verdict %s (%v), want it to hold", v, v.Broken())
	}
}

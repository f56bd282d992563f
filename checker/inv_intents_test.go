package checker

import (
	"strings"
	"testing"
)

// TestRightIntents: the outbox holds what the harness's rows call for;
// a row no business event calls for, or one addressed to someone else,
// breaks it alone; a run without the harness record is not judged.
func TestRightIntents(t *testing.T) {
	t.Parallel()
	if v := Check(auditState()); !v.OK() {
		t.Fatalf("the happy run: %s %q", v, v.Details)
	}
	s := auditState()
	s.Outbox = append(s.Outbox, OutboxRow{ID: 2, DedupKey: "GRADE_RENEWAL:2026-12:1", Kind: "GRADE_RENEWAL", Status: "PUBLISHED", MemberID: 1, Phone: "01000000001"})
	s.Inbox = append(s.Inbox, InboxRow{MessageID: MessageID(2), OutboxID: 2, Status: "SENT"})
	s.Ledger = append(s.Ledger, HandsetEntry{RefKey: MessageID(2), Phone: "01000000001", At: auditDay})
	onlyBroken(t, Record{State: s}, "right-intents")

	s = auditState()
	s.Outbox[0].Phone = "01000000009"
	v := Check(s)
	if got := rightIntents.Check(Input{State: s, Tally: NewTally(s)}); len(got) != 1 || !strings.Contains(got[0], "addressed to member 1 at 01000000009") {
		t.Errorf("a row to another number: %q (%s)", got, v)
	}

	s = auditState()
	s.Harness = nil
	s.Intents = []string{"GRADE_RENEWAL:7001"}
	for _, r := range Check(s).Invariants {
		if r.Name == "right-intents" && (r.NotJudged == "" || !r.Valid) {
			t.Errorf("without the harness record: %+v", r)
		}
	}
}

// TestAuditIntentsMissing: an expected notification never enqueued is a
// silent loss by the auditor's intents, whatever the business tables say.
func TestAuditIntentsMissing(t *testing.T) {
	t.Parallel()
	s := auditState()
	s.Outbox, s.Inbox, s.Ledger = nil, nil, nil
	v := Check(s)
	if v.LostSilently != 1 || v.Intents != 1 {
		t.Errorf("the renewal never enqueued: %s", v)
	}
}

package audit_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/outboxchaos/outboxchaos/audit"
	"github.com/outboxchaos/outboxchaos/audit/audittest"
	"github.com/outboxchaos/outboxchaos/checker"
	"github.com/outboxchaos/outboxchaos/fakevendor"
	"github.com/outboxchaos/outboxchaos/system/sms"
	"github.com/outboxchaos/outboxchaos/system/testenv"
)

// The report can be asked of the vendor's report-lookup API, message by
// message: the fake vendor's ledger answers, a message it delivered twice
// is found, and a vendor that stops answering leaves the audit not
// judged.
func TestAuditReportLookupAPI(t *testing.T) {
	t.Parallel()
	fv := fakevendor.New(fakevendor.Options{Account: "audit", Password: "secret"})
	ts := httptest.NewServer(fv.Handler())
	t.Cleanup(ts.Close)
	t.Cleanup(func() { _ = fv.Close() })
	client := sms.New(ts.URL, "audit", "secret", 5*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, id := range []int64{1, 2, 2} {
		req := sms.Request{RefKey: checker.MessageID(id), Phone: "01012345678", From: "0212345678", TemplateCode: "GRADE_RENEWAL_V1",
			Text: "등급이 갱신되었습니다.", Fallback: "[알림] 등급 갱신"}
		if r := client.Send(ctx, req); r.Outcome != sms.Sent {
			t.Fatalf("send %s: %+v", req.RefKey, r)
		}
	}
	db := testenv.NewMigratedSchema(t)
	old := audittest.Now().Add(-3 * time.Hour)
	audittest.SeedOutbox(t, db, audittest.Outbox{ID: 1, Created: old}, audittest.Outbox{ID: 2, Created: old})
	audittest.SeedInbox(t, db, audittest.Inbox{OutboxID: 1, Created: old}, audittest.Inbox{OutboxID: 2, Created: old})
	o := audit.Options{Query: audit.Query{URL: db.URL, Schema: db.Schema, AllowWriteRole: true}, Lookup: client.Lookup, Settings: audit.Defaults()}
	res, err := audit.Run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	twice, _ := res.Verdict("nothing-twice")
	if res.Report != 3 || len(twice.Findings) != 1 || !strings.Contains(twice.Findings[0].Detail, checker.MessageID(2)) {
		t.Errorf("%d report lines, nothing-twice %v; want 3 lines and notification-outbox-2 twice", res.Report, twice.Findings)
	}
	ts.Close()
	_, err = audit.Run(ctx, o)
	var nj *audit.NotJudgedError
	if !errors.As(err, &nj) || !strings.Contains(err.Error(), "vendor report lookup 1 of 2") {
		t.Errorf("a vendor that does not answer: err %v, want not judged", err)
	}
}

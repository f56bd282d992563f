package relay

import (
	"encoding/json"
	"testing"
	"time"

	gojson "github.com/goccy/go-json"

	"github.com/outboxchaos/outboxchaos/history"
	"github.com/outboxchaos/outboxchaos/system/canary"
	"github.com/outboxchaos/outboxchaos/system/clock"
	"github.com/outboxchaos/outboxchaos/system/config"
	"github.com/outboxchaos/outboxchaos/system/notification"
)

// The per-row decisions need no Postgres and no broker: a claimed row, the
// lookups and the clock's time in, a verdict out.

// day is the Seoul calendar day of every case.
var day = clock.Date(time.Date(2025, 3, 14, 12, 0, 0, 0, time.UTC))

// at is hh:mm Seoul on day (plus days).
func at(days, hh, mm int) time.Time { return clock.At(day.AddDate(0, 0, days), hh, mm) }

// dateCol is day+days as a DATE column scans: midnight UTC.
func dateCol(days int) time.Time {
	d := day.AddDate(0, 0, days)
	return time.Date(d.Year(), d.Month(), d.Day(), 0, 0, 0, 0, time.UTC)
}

func claimedRow(member int64, phone string, ad bool, scheduledDays int) claimed {
	body, err := json.Marshal(notification.Payload{Kind: notification.GradeRenewal, MemberID: member, Phone: phone,
		Template: "T", Advertising: ad, ScheduledDate: dateCol(scheduledDays).Format(time.DateOnly)})
	if err != nil {
		panic(err)
	}
	return claimed{id: 7, dedupKey: "K:7", payload: body, advertising: ad, scheduledDate: dateCol(scheduledDays), attempts: 0}
}

func TestDecide(t *testing.T) {
	t.Parallel()
	members := map[int64]bool{1: true, 2: false} // 1 consents; 2 withdrew; 3 does not exist
	registered := map[string]bool{"01000000001": true}
	const reg, unreg = "01000000001", "01099999999"
	malformed := claimedRow(1, reg, false, 0)
	malformed.payload = []byte(`{"member_id":`)
	final := func(v verdict, status, reason, kind string) decision {
		return decision{verdict: v, status: status, reason: reason, alertKind: kind}
	}
	deferTo := func(t time.Time) decision { return decision{verdict: deferRow, until: t} }
	pub := decision{verdict: publishRow}

	for _, tc := range []struct {
		name       string
		bug        string
		production bool
		row        claimed
		now        time.Time
		want       decision
	}{
		{"due today", "", false, claimedRow(1, reg, false, 0), at(0, 10, 0), pub},
		{"malformed payload", "", false, malformed, at(0, 10, 0), final(failRow, "FAILED", "MALFORMED_PAYLOAD", history.AlertRelayFailed)},
		{"scheduled yesterday", "", false, claimedRow(1, reg, false, -1), at(0, 10, 0), final(expireRow, "EXPIRED", "SCHEDULED_DATE_PASSED", history.AlertExpired)},
		{"yesterday, just after Seoul midnight", "", false, claimedRow(1, reg, false, -1), at(0, 0, 30), final(expireRow, "EXPIRED", "SCHEDULED_DATE_PASSED", history.AlertExpired)},
		{"today, just after Seoul midnight", "", false, claimedRow(1, reg, false, 0), at(0, 0, 30), pub},
		{"scheduled tomorrow", "", false, claimedRow(1, reg, false, 1), at(0, 10, 0), pub},
		{"expiry before consent", "", false, claimedRow(3, unreg, false, -1), at(0, 10, 0), final(expireRow, "EXPIRED", "SCHEDULED_DATE_PASSED", history.AlertExpired)},
		{"ad before the cut-off", "", false, claimedRow(1, reg, true, 0), at(0, 20, 39), pub},
		{"ad at the cut-off", "", false, claimedRow(1, reg, true, 0), at(0, 20, 40), deferTo(at(1, 8, 0))},
		{"ad before the resume", "", false, claimedRow(1, reg, true, 0), at(0, 7, 59), deferTo(at(0, 8, 0))},
		{"ad at the resume", "", false, claimedRow(1, reg, true, 0), at(0, 8, 0), pub},
		{"non-ad after the cut-off", "", false, claimedRow(1, reg, false, 0), at(0, 21, 0), pub},
		{"expired ad after the cut-off", "", false, claimedRow(1, reg, true, -1), at(0, 21, 0), final(expireRow, "EXPIRED", "SCHEDULED_DATE_PASSED", history.AlertExpired)},
		{"ad after the cut-off, consent withdrawn", "", false, claimedRow(2, reg, true, 0), at(0, 21, 0), deferTo(at(1, 8, 0))},
		{"member not found", "", false, claimedRow(3, reg, false, 0), at(0, 10, 0), final(skipRow, "SKIPPED", "MEMBER_NOT_FOUND", "")},
		{"consent withdrawn", "", false, claimedRow(2, reg, false, 0), at(0, 10, 0), final(skipRow, "SKIPPED", "NO_SMS_CONSENT", "")},
		{"unregistered number", "", false, claimedRow(1, unreg, false, 0), at(0, 10, 0), final(skipRow, "SKIPPED", "NON_PRODUCTION_NUMBER", "")},
		{"unregistered number in production", "", true, claimedRow(1, unreg, false, 0), at(0, 10, 0), pub},
		{"NoExpiry canary", canary.NoExpiry, false, claimedRow(1, reg, false, -1), at(0, 10, 0), pub},
		{"NoAdDeferral canary", canary.NoAdDeferral, false, claimedRow(1, reg, true, 0), at(0, 20, 40), pub},
		{"NoAdDeferral still expires", canary.NoAdDeferral, false, claimedRow(1, reg, true, -1), at(0, 20, 40), final(expireRow, "EXPIRED", "SCHEDULED_DATE_PASSED", history.AlertExpired)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Default()
			cfg.Production = tc.production
			got := rulesFor(cfg, tc.bug).decide(tc.row, tc.now, members, registered)
			if got.verdict == publishRow {
				if got.payload.OutboxID != tc.row.id || got.payload.DedupKey != tc.row.dedupKey {
					t.Errorf("published payload %+v lacks outbox id %d / dedup key %q", got.payload, tc.row.id, tc.row.dedupKey)
				}
			}
			if !got.until.Equal(tc.want.until) {
				t.Errorf("until %s, want %s", got.until, tc.want.until)
			}
			if got.verdict != tc.want.verdict || got.status != tc.want.status || got.reason != tc.want.reason ||
				got.alertKind != tc.want.alertKind {
				t.Errorf("decide = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestFailure: each failed publish backs off by its step (the last step
// repeats) and the AlertAttempt-th failure alerts, once.
func TestFailure(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	cfg.Backoff = config.Durations{time.Minute, 2 * time.Minute, 4 * time.Minute}
	cfg.AlertAttempt = 3
	ru := rulesFor(cfg, "")
	now := at(0, 10, 0)
	for _, tc := range []struct {
		attempts int
		want     retry
	}{
		{0, retry{attempt: 1, next: now.Add(time.Minute)}},
		{1, retry{attempt: 2, next: now.Add(2 * time.Minute)}},
		{2, retry{attempt: 3, next: now.Add(4 * time.Minute), alert: true}},
		{3, retry{attempt: 4, next: now.Add(4 * time.Minute)}},
		{9, retry{attempt: 10, next: now.Add(4 * time.Minute)}},
	} {
		row := claimedRow(1, "x", false, 0)
		row.attempts = tc.attempts
		if got := ru.failure(row, now); got.attempt != tc.want.attempt || !got.next.Equal(tc.want.next) || got.alert != tc.want.alert {
			t.Errorf("after %d attempts: %+v, want %+v", tc.attempts, got, tc.want)
		}
	}
}

// TestDecodeMatchesEncodingJSON: the relay decodes payloads with
// goccy/go-json for speed; on every payload here it must accept and reject
// exactly what encoding/json does, with the same result, and re-encode to
// the same bytes.
func TestDecodeMatchesEncodingJSON(t *testing.T) {
	payloads := []string{
		`{"kind":"GRADE_RENEWAL","member_id":7,"phone":"010-1234-5678","template":"t","variables":{"b":"2","a":"1"},"advertising":false,"scheduled_date":"2026-12-01"}`,
		`{"kind":"AD","member_id":-3,"phone":"p","template":"t","fallback":"짧은 문자 <b>&</b>","advertising":true,"scheduled_date":"2026-12-01","extra":1}`,
		`{"member_id":"7"}`, `{"member_id":1.5}`, `{"member_id":99999999999999999999}`, `{"variables":{"a":1}}`,
		`{"variables":[]}`, `{"advertising":"yes"}`, `{"phone":null,"member_id":null}`, `{"MEMBER_ID":8,"Phone":"x"}`,
		`[]`, `null`, `"s"`, `{"member_id":`, `{} {}`, `{"kind":"\ud800"}`,
	}
	for _, in := range payloads {
		var std, fast notification.Payload
		errStd := json.Unmarshal([]byte(in), &std)
		errFast := gojson.Unmarshal([]byte(in), &fast)
		if (errStd == nil) != (errFast == nil) {
			t.Errorf("%s: encoding/json error %v, goccy/go-json error %v", in, errStd, errFast)
			continue
		}
		if errStd != nil {
			continue
		}
		a, _ := json.Marshal(std)
		b, err := gojson.Marshal(fast)
		if err != nil || string(a) != string(b) {
			t.Errorf("%s: encoding/json gives %s, goccy/go-json %s (%v)", in, a, b, err)
		}
	}
}

package notification_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/outboxchaos/outboxchaos/system/notification"
)

func validPayload() notification.Payload {
	return notification.Payload{
		OutboxID: 7, DedupKey: "GRADE_RENEWAL:7", Kind: notification.GradeRenewal, MemberID: 7, Phone: "01000000007",
		Template: "GRADE_RENEWAL_V1", Variables: map[string]string{"name": "회원7", "grade": "GOLD"},
		ScheduledDate: "2025-01-02",
	}
}

func TestRender_MessageIDAtMost100Characters(t *testing.T) {
	t.Parallel()
	p := validPayload()
	// Multi-byte characters: the limit counts characters, not bytes.
	ok := strings.Repeat("가", notification.MaxMessageIDLen)
	if _, err := notification.Render(ok, p); err != nil {
		t.Fatalf("100-character message_id rejected: %v", err)
	}
	_, err := notification.Render(ok+"x", p)
	if err == nil {
		t.Fatal("101-character message_id accepted")
	}
	if !errors.Is(err, notification.ErrPermanent) || notification.Reason(err) != "MESSAGE_ID_TOO_LONG" {
		t.Fatalf("101-character message_id: got %v (reason %q), want permanent MESSAGE_ID_TOO_LONG", err, notification.Reason(err))
	}
}

func TestRender_FallbackAtMost2000EUCKRBytes(t *testing.T) {
	t.Parallel()
	p := validPayload()
	// Each Hangul syllable is 2 bytes in EUC-KR (3 in UTF-8).
	p.Fallback = strings.Repeat("가", 1000)
	r, err := notification.Render("notification-outbox-7", p)
	if err != nil {
		t.Fatalf("2000-byte fallback rejected: %v", err)
	}
	if r.Fallback != p.Fallback {
		t.Fatalf("fallback changed: %q", r.Fallback)
	}
	p.Fallback = strings.Repeat("가", 1000) + "a"
	_, err = notification.Render("notification-outbox-7", p)
	if err == nil || !errors.Is(err, notification.ErrPermanent) || notification.Reason(err) != "FALLBACK_TOO_LONG" {
		t.Fatalf("2001-byte fallback: got %v, want permanent FALLBACK_TOO_LONG", err)
	}
	// 1000 syllables are 3000 UTF-8 bytes: the limit must be measured in
	// EUC-KR, so a 2000-byte EUC-KR text is fine even though its UTF-8 is not.
	if n, _ := notification.EUCKRLen(strings.Repeat("가", 1000)); n != 2000 {
		t.Fatalf("EUCKRLen = %d, want 2000", n)
	}
}

func TestRender_FallbackNotEncodableInEUCKRFails(t *testing.T) {
	t.Parallel()
	p := validPayload()
	p.Fallback = "축하합니다 😀"
	_, err := notification.Render("notification-outbox-7", p)
	if err == nil || !errors.Is(err, notification.ErrPermanent) || notification.Reason(err) != "FALLBACK_UNBUILDABLE" {
		t.Fatalf("emoji fallback: got %v, want permanent FALLBACK_UNBUILDABLE", err)
	}
}

func TestRender_UnknownKindAndTemplate(t *testing.T) {
	t.Parallel()
	p := validPayload()
	p.Kind = "BIRTHDAY"
	if _, err := notification.Render("m", p); err == nil || notification.Reason(err) != "UNKNOWN_KIND" {
		t.Fatalf("unknown kind: got %v", err)
	}
	p = validPayload()
	p.Template = "NOPE_V9"
	if _, err := notification.Render("m", p); err == nil || notification.Reason(err) != "TEMPLATE_MISSING" {
		t.Fatalf("missing template: got %v", err)
	}
}

func TestRender_FillsTemplateVariables(t *testing.T) {
	t.Parallel()
	r, err := notification.Render("m", validPayload())
	if err != nil {
		t.Fatal(err)
	}
	if r.TemplateCode != "GRADE_RENEWAL_V1" || !strings.Contains(r.Text, "회원7") || !strings.Contains(r.Text, "GOLD") ||
		strings.Contains(r.Text, "#{") || strings.Contains(r.Fallback, "#{") {
		t.Fatalf("rendered %+v", r)
	}
}

func TestDecode_RejectsUnknownFieldsAndTrailingData(t *testing.T) {
	t.Parallel()
	good := `{"kind":"GRADE_RENEWAL","member_id":1,"phone":"01000000001","template":"GRADE_RENEWAL_V1","advertising":false,"scheduled_date":"2025-01-02"}`
	if _, err := notification.Decode([]byte(good)); err != nil {
		t.Fatalf("valid payload rejected: %v", err)
	}
	for name, body := range map[string]string{
		"unknown field":  strings.Replace(good, `"advertising"`, `"bogus":1,"advertising"`, 1),
		"trailing data":  good + `{}`,
		"not json":       `{"kind":`,
		"missing phone":  strings.Replace(good, `"phone":"01000000001",`, ``, 1),
		"bad date":       strings.Replace(good, `2025-01-02`, `2025-13-40`, 1),
		"missing kind":   strings.Replace(good, `"kind":"GRADE_RENEWAL",`, ``, 1),
		"wrong type":     strings.Replace(good, `"member_id":1`, `"member_id":"one"`, 1),
		"missing sched":  strings.Replace(good, `,"scheduled_date":"2025-01-02"`, ``, 1),
		"empty document": ``,
	} {
		if _, err := notification.Decode([]byte(body)); !errors.Is(err, notification.ErrMalformed) {
			t.Errorf("%s: got %v, want ErrMalformed", name, err)
		}
	}
}

// design §2 dedup_key formats and design §4 message_id format: changing either
// breaks deduplication.
func TestKeys_FormatsMatchSpec(t *testing.T) {
	t.Parallel()
	day := time.Date(2025, 3, 9, 0, 0, 0, 0, time.UTC)
	for got, want := range map[string]string{
		notification.GradeRenewalKey(11):           "GRADE_RENEWAL:11",
		notification.AwardsWinningKey(12):          "MONTHLY_AWARDS_WINNING:12",
		notification.AwardsClosingKey(13, day):     "MONTHLY_AWARDS_CLOSING:13:2025-03-09",
		notification.MissionReminderKey(day, 14):   "MISSION_PARTICIPATION_REMINDER:2025-03-09:14",
		notification.GradeLockInKey("2025-03", 15): "GRADE_LOCK_IN:2025-03:15",
		notification.AnniversaryKey(16):            "ANNIVERSARY_COUPON:16",
		notification.MessageID(17):                 "notification-outbox-17",
	} {
		if got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
}

func TestKinds_AdvertisingFlag(t *testing.T) {
	t.Parallel()
	for _, k := range notification.Kinds {
		want := k == notification.MissionReminder || k == notification.GradeLockIn
		if k.Advertising() != want {
			t.Errorf("%s.Advertising() = %v, want %v", k, k.Advertising(), want)
		}
		if !k.Known() {
			t.Errorf("%s not known", k)
		}
	}
	if notification.Kind("X").Known() {
		t.Error("unknown kind reported known")
	}
}

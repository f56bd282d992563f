// Package notification owns the message model shared by the outbox and the
// worker: the notification kinds of design §2, their deterministic dedup keys,
// the payload written to the outbox and carried in the RabbitMQ body, the
// message_id format, the templates, and the checks on what may be sent
// (message_id length, EUC-KR fallback size).
package notification

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"golang.org/x/text/encoding/korean"
	"golang.org/x/text/transform"
)

// Kind names a notification type.
type Kind string

// The notification kinds (design §2).
const (
	GradeRenewal          Kind = "GRADE_RENEWAL"
	MonthlyAwardsWinning  Kind = "MONTHLY_AWARDS_WINNING"
	MonthlyAwardsClosing  Kind = "MONTHLY_AWARDS_CLOSING"
	MissionReminder       Kind = "MISSION_PARTICIPATION_REMINDER"
	GradeLockIn           Kind = "GRADE_LOCK_IN"
	AnniversaryCoupon     Kind = "ANNIVERSARY_COUPON"
	MaxMessageIDLen            = 100
	MaxFallbackEUCKRBytes      = 2000
)

// Kinds lists every known kind in a stable order.
var Kinds = []Kind{GradeRenewal, MonthlyAwardsWinning, MonthlyAwardsClosing, MissionReminder, GradeLockIn, AnniversaryCoupon}

// Known reports whether k is a known kind.
func (k Kind) Known() bool {
	_, ok := templates[k]
	return ok
}

// Advertising reports whether messages of kind k are advertising (subject to
// the 20:40 / 20:50 cut-offs).
func (k Kind) Advertising() bool {
	return k == MissionReminder || k == GradeLockIn
}

// GradeRenewalKey is GRADE_RENEWAL:{grade history row id}.
func GradeRenewalKey(gradeHistoryID int64) string {
	return fmt.Sprintf("%s:%d", GradeRenewal, gradeHistoryID)
}

// AwardsWinningKey is MONTHLY_AWARDS_WINNING:{winning row id}.
func AwardsWinningKey(winningID int64) string {
	return fmt.Sprintf("%s:%d", MonthlyAwardsWinning, winningID)
}

// AwardsClosingKey is MONTHLY_AWARDS_CLOSING:{winning row id}:{deadline date}.
func AwardsClosingKey(winningID int64, deadline time.Time) string {
	return fmt.Sprintf("MONTHLY_AWARDS_CLOSING:%d:%s", winningID, deadline.Format(time.DateOnly))
}

// MissionReminderKey is MISSION_PARTICIPATION_REMINDER:{date}:{member}.
func MissionReminderKey(day time.Time, memberID int64) string {
	return fmt.Sprintf("%s:%s:%d", MissionReminder, day.Format(time.DateOnly), memberID)
}

// GradeLockInKey is GRADE_LOCK_IN:{month}:{member}.
func GradeLockInKey(month string, memberID int64) string {
	return fmt.Sprintf("%s:%s:%d", GradeLockIn, month, memberID)
}

// AnniversaryKey is ANNIVERSARY_COUPON:{coupon id}.
func AnniversaryKey(couponID int64) string {
	return fmt.Sprintf("%s:%d", AnniversaryCoupon, couponID)
}

// MessageID is the inbox dedup key of an outbox row: identical for every
// republish, retry and parking round trip. Changing it breaks deduplication.
func MessageID(outboxID int64) string {
	return fmt.Sprintf("notification-outbox-%d", outboxID)
}

// Payload is the whole message as of the event. The outbox stores it; the
// relay adds OutboxID and DedupKey and publishes it as the message body.
type Payload struct {
	OutboxID      int64             `json:"outbox_id,omitempty"`
	DedupKey      string            `json:"dedup_key,omitempty"`
	Kind          Kind              `json:"kind"`
	MemberID      int64             `json:"member_id"`
	Phone         string            `json:"phone"`
	Template      string            `json:"template"`
	Variables     map[string]string `json:"variables,omitempty"`
	Fallback      string            `json:"fallback,omitempty"`
	Advertising   bool              `json:"advertising"`
	ScheduledDate string            `json:"scheduled_date"` // YYYY-MM-DD, Asia/Seoul
}

// ErrMalformed wraps every payload decoding failure.
var ErrMalformed = errors.New("malformed payload")

// Decode parses a payload strictly: unknown fields or trailing data are
// malformed.
func Decode(b []byte) (Payload, error) {
	var p Payload
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return p, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if dec.More() {
		return p, fmt.Errorf("%w: trailing data", ErrMalformed)
	}
	if p.Kind == "" || p.Phone == "" || p.ScheduledDate == "" {
		return p, fmt.Errorf("%w: kind, phone and scheduled_date are required", ErrMalformed)
	}
	if _, err := time.Parse(time.DateOnly, p.ScheduledDate); err != nil {
		return p, fmt.Errorf("%w: scheduled_date: %v", ErrMalformed, err)
	}
	return p, nil
}

// Template is an alimtalk template and its SMS fallback.
type Template struct {
	Code     string
	Text     string // alimtalk body, with #{var} placeholders
	Fallback string // SMS fallback, with #{var} placeholders
}

var templates = map[Kind]Template{
	GradeRenewal:         {"GRADE_RENEWAL_V1", "#{name}님, 등급이 #{grade}(으)로 갱신되었습니다.", "[알림] #{name}님 등급 #{grade} 갱신"},
	MonthlyAwardsWinning: {"AWARDS_WIN_V1", "#{name}님, #{award}에 당첨되셨습니다!", "[알림] #{name}님 #{award} 당첨"},
	MonthlyAwardsClosing: {"AWARDS_CLOSING_V1", "#{name}님, #{award} 수령 마감이 #{deadline}입니다.", "[알림] #{award} 수령 마감 #{deadline}"},
	MissionReminder:      {"MISSION_REMIND_V1", "(광고) #{name}님, 오늘의 미션에 참여해 보세요.", "(광고) 오늘의 미션 참여하기"},
	GradeLockIn:          {"GRADE_LOCKIN_V1", "(광고) #{name}님, 이번 달 등급을 지켜보세요.", "(광고) 등급 유지 혜택"},
	AnniversaryCoupon:    {"ANNIV_COUPON_V1", "#{name}님, 가입 #{years}주년 쿠폰이 발급되었습니다.", "[알림] #{years}주년 쿠폰 발급"},
}

// TemplateFor returns the template of kind k.
func TemplateFor(k Kind) (Template, bool) {
	t, ok := templates[k]
	return t, ok
}

// ErrPermanent marks a message that can never be sent as it is.
var ErrPermanent = errors.New("permanent failure")

// Rendered is a message ready for the vendor.
type Rendered struct {
	TemplateCode string
	Text         string
	Fallback     string
}

// Render assembles the alimtalk text and fallback SMS and checks the limits:
// message_id at most 100 characters, fallback at most 2,000 bytes in EUC-KR
// (and encodable in EUC-KR at all). Every error wraps ErrPermanent.
func Render(messageID string, p Payload) (Rendered, error) {
	if n := len([]rune(messageID)); n > MaxMessageIDLen {
		return Rendered{}, fmt.Errorf("%w: MESSAGE_ID_TOO_LONG: %d characters > %d", ErrPermanent, n, MaxMessageIDLen)
	}
	t, ok := templates[p.Kind]
	if !ok {
		return Rendered{}, fmt.Errorf("%w: UNKNOWN_KIND: %q", ErrPermanent, p.Kind)
	}
	if p.Template != "" && p.Template != t.Code {
		return Rendered{}, fmt.Errorf("%w: TEMPLATE_MISSING: %q", ErrPermanent, p.Template)
	}
	fb := p.Fallback
	if fb == "" {
		fb = fill(t.Fallback, p.Variables)
	}
	n, err := EUCKRLen(fb)
	if err != nil {
		return Rendered{}, fmt.Errorf("%w: FALLBACK_UNBUILDABLE: %v", ErrPermanent, err)
	}
	if n > MaxFallbackEUCKRBytes {
		return Rendered{}, fmt.Errorf("%w: FALLBACK_TOO_LONG: %d EUC-KR bytes > %d", ErrPermanent, n, MaxFallbackEUCKRBytes)
	}
	return Rendered{TemplateCode: t.Code, Text: fill(t.Text, p.Variables), Fallback: fb}, nil
}

// Reason returns the upper-case reason code at the start of a permanent
// error's message (for x-failure-reason), or "PERMANENT".
func Reason(err error) string {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, ErrPermanent.Error()+": ")
	if i := strings.IndexByte(msg, ':'); i > 0 {
		return msg[:i]
	}
	return "PERMANENT"
}

// EUCKRLen returns the length of s encoded in EUC-KR, or an error if s has a
// character EUC-KR cannot encode.
func EUCKRLen(s string) (int, error) {
	b, _, err := transform.String(korean.EUCKR.NewEncoder(), s)
	if err != nil {
		return 0, fmt.Errorf("encode fallback in EUC-KR: %w", err)
	}
	return len(b), nil
}

func fill(s string, vars map[string]string) string {
	for k, v := range vars {
		s = strings.ReplaceAll(s, "#{"+k+"}", v)
	}
	return s
}

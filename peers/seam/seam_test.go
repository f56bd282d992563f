package seam

import (
	"encoding/json"
	"testing"

	"github.com/outboxchaos/outboxchaos/system/notification"
)

// TestNewMessage: a peer's message is the one our relay publishes — the
// stored payload with outbox_id and dedup_key set, message_id
// notification-outbox-{id}, routing key send.
func TestNewMessage(t *testing.T) {
	stored, _ := json.Marshal(notification.Payload{Kind: notification.GradeRenewal, MemberID: 7, Phone: "01000000007", ScheduledDate: "2026-12-01"})
	m, err := NewMessage(42, "GRADE_RENEWAL:9", stored)
	if err != nil {
		t.Fatal(err)
	}
	if m.MessageID != "notification-outbox-42" || m.RoutingKey != "send" || m.OutboxID != 42 {
		t.Fatalf("message %+v", m)
	}
	var p notification.Payload
	if err := json.Unmarshal(m.Body, &p); err != nil {
		t.Fatal(err)
	}
	if p.OutboxID != 42 || p.DedupKey != "GRADE_RENEWAL:9" || p.MemberID != 7 {
		t.Fatalf("body %+v", p)
	}
	if _, err := NewMessage(1, "k", []byte("{")); err == nil {
		t.Fatal("a malformed payload must be an error")
	}
}

// TestTracerMatches: a rule fires only on SQL containing all its parts.
func TestTracerMatches(t *testing.T) {
	if !matches(`INSERT INTO "watermill_offsets_x" ... ON CONFLICT (consumer_group) DO UPDATE SET offset_acked`, []string{"INSERT INTO", "offset_acked", "DO UPDATE SET"}) {
		t.Fatal("the ack upsert must match")
	}
	if matches(`INSERT INTO "watermill_offsets_x" (consumer_group, offset_acked, last_processed_transaction_id) VALUES ($1, 0, '0') ON CONFLICT DO NOTHING;`, []string{"INSERT INTO", "offset_acked", "DO UPDATE SET"}) {
		t.Fatal("the zero-offsets insert every subscribe runs must not match")
	}
	if matches("SELECT 1", nil) {
		t.Fatal("an empty rule matches nothing")
	}
}

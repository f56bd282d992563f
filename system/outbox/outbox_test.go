package outbox_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/outboxchaos/outboxchaos/history"
	"github.com/outboxchaos/outboxchaos/system/clock"
	"github.com/outboxchaos/outboxchaos/system/notification"
	"github.com/outboxchaos/outboxchaos/system/outbox"
	"github.com/outboxchaos/outboxchaos/system/testenv"
)

func entry(key string) outbox.Entry {
	return outbox.Entry{DedupKey: key, Payload: notification.Payload{
		OutboxID: 99, DedupKey: "should-not-be-stored",
		Kind: notification.GradeRenewal, MemberID: 1, Phone: "01000000001", Template: "GRADE_RENEWAL_V1",
		Variables: map[string]string{"name": "a", "grade": "GOLD"}, ScheduledDate: "2025-01-02",
	}}
}

// design §2 insertIgnore: the same dedup_key twice is one row; the second
// insert reports that nothing was inserted and changes nothing.
func TestEnqueue_InsertIgnoreOnDedupKey(t *testing.T) {
	t.Parallel()
	db := testenv.NewMigratedSchema(t)
	ctx := context.Background()
	now := clock.At(time.Now(), 10, 0)
	ins, err := outbox.Enqueue(ctx, db.Pool, now, entry("GRADE_RENEWAL:1"))
	if err != nil || !ins {
		t.Fatalf("first enqueue: inserted=%v err=%v", ins, err)
	}
	second := entry("GRADE_RENEWAL:1")
	second.Payload.Phone = "01099999999"
	ins, err = outbox.Enqueue(ctx, db.Pool, now.Add(time.Hour), second)
	if err != nil || ins {
		t.Fatalf("second enqueue: inserted=%v err=%v, want false, nil", ins, err)
	}
	rows, err := outbox.All(ctx, db.Pool)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 {
		t.Fatalf("%d rows, want 1", len(rows))
	}
	r := rows[0]
	if r.Status != history.OutboxPending || r.Attempts != 0 || !r.NextAttemptAt.Equal(now) || r.ClaimedBy != nil {
		t.Fatalf("row %+v: want PENDING, 0 attempts, due at %s, unclaimed", r, now)
	}
	var p notification.Payload
	if err := json.Unmarshal(r.Payload, &p); err != nil {
		t.Fatal(err)
	}
	if p.Phone != "01000000001" {
		t.Fatalf("second enqueue overwrote the payload: phone %s", p.Phone)
	}
	if p.OutboxID != 0 || p.DedupKey != "" {
		t.Fatalf("payload stores relay-owned fields: %+v", p)
	}
	if r.Kind != string(notification.GradeRenewal) || r.ScheduledDate.Format(time.DateOnly) != "2025-01-02" || r.Advertising {
		t.Fatalf("row columns %+v", r)
	}
}

func TestEnqueue_RejectsInvalidEntriesWithoutWriting(t *testing.T) {
	t.Parallel()
	db := testenv.NewMigratedSchema(t)
	ctx := context.Background()
	now := clock.At(time.Now(), 10, 0)
	cases := map[string]struct {
		mutate func(*outbox.Entry)
		msg    string
	}{
		"unknown kind":   {func(e *outbox.Entry) { e.Payload.Kind = "BIRTHDAY" }, `unknown notification kind "BIRTHDAY"`},
		"empty phone":    {func(e *outbox.Entry) { e.Payload.Phone = "" }, "empty phone"},
		"empty key":      {func(e *outbox.Entry) { e.DedupKey = "" }, "empty dedup_key"},
		"bad date":       {func(e *outbox.Entry) { e.Payload.ScheduledDate = "tomorrow" }, "scheduled_date"},
		"missing date":   {func(e *outbox.Entry) { e.Payload.ScheduledDate = "" }, "scheduled_date"},
		"empty kind str": {func(e *outbox.Entry) { e.Payload.Kind = "" }, "unknown notification kind"},
	}
	for name, c := range cases {
		e := entry("K:" + name)
		c.mutate(&e)
		ins, err := outbox.Enqueue(ctx, db.Pool, now, e)
		if err == nil || ins {
			t.Errorf("%s: accepted (inserted=%v)", name, ins)
			continue
		}
		if !errors.Is(err, outbox.ErrInvalid) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: error %q, want ErrInvalid mentioning %q", name, err, c.msg)
		}
	}
	rows, err := outbox.All(ctx, db.Pool)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 0 {
		t.Fatalf("invalid entries wrote %d rows", len(rows))
	}
}

// Concurrent enqueues of one business event still make one row.
func TestEnqueue_ConcurrentSameKeyOneRow(t *testing.T) {
	t.Parallel()
	db := testenv.NewMigratedSchema(t)
	ctx := context.Background()
	now := clock.At(time.Now(), 10, 0)
	const n = 8
	results := make(chan bool, n)
	errs := make(chan error, n)
	for range n {
		go func() {
			ins, err := outbox.Enqueue(ctx, db.Pool, now, entry("GRADE_RENEWAL:5"))
			results <- ins
			errs <- err
		}()
	}
	inserted := 0
	for range n {
		if <-results {
			inserted++
		}
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	rows, _ := outbox.All(ctx, db.Pool)
	if inserted != 1 || len(rows) != 1 {
		t.Fatalf("%d reported inserted, %d rows; want 1 and 1", inserted, len(rows))
	}
}

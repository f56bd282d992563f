package relay_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/outboxchaos/outboxchaos/system/alert"
	"github.com/outboxchaos/outboxchaos/system/clock"
	"github.com/outboxchaos/outboxchaos/system/config"
	"github.com/outboxchaos/outboxchaos/system/notification"
	"github.com/outboxchaos/outboxchaos/system/outbox"
	"github.com/outboxchaos/outboxchaos/system/publisher"
	"github.com/outboxchaos/outboxchaos/system/relay"
	"github.com/outboxchaos/outboxchaos/system/testenv"
)

// fakePub is a relay.Publisher that records every message. hook, if set,
// runs inside PublishBatch before the outcomes are returned (it may block or
// inspect the database mid-run); outcome decides each result (Confirmed by
// default); err makes the whole batch fail as if unconnected.
type fakePub struct {
	mu      sync.Mutex
	msgs    []publisher.Message
	batches int
	hook    func(msgs []publisher.Message)
	outcome func(m publisher.Message) publisher.Outcome
	err     error
}

func (f *fakePub) PublishBatch(_ context.Context, msgs []publisher.Message) ([]publisher.Result, error) {
	if f.hook != nil {
		f.hook(msgs)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.batches++
	if f.err != nil {
		return nil, f.err
	}
	f.msgs = append(f.msgs, msgs...)
	res := make([]publisher.Result, len(msgs))
	for i, m := range msgs {
		res[i] = publisher.Result{MessageID: m.MessageID, Outcome: publisher.Confirmed}
		if f.outcome != nil {
			res[i].Outcome = f.outcome(m)
		}
		if res[i].Outcome != publisher.Confirmed {
			res[i].Err = fmt.Errorf("fake %s", res[i].Outcome)
		}
	}
	return res, nil
}

func (f *fakePub) published() []publisher.Message {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]publisher.Message(nil), f.msgs...)
}

func quietLog() *slog.Logger { return slog.New(slog.DiscardHandler) }

// testConfig is the production configuration with short durations, pointed
// at db and prefix.
func testConfig(db *testenv.DB, prefix, instance string) config.Config {
	c := config.Default()
	c.PGURL = db.URL
	c.AMQPURL = testenv.AMQPURL()
	c.Prefix = prefix
	c.Instance = instance
	c.Lease = 2 * time.Second
	c.ConfirmTimeout = time.Second
	c.InListenerDelay = 20 * time.Millisecond
	c.RetryTTL = 200 * time.Millisecond
	c.SendingTimeout = 500 * time.Millisecond
	c.VendorTimeout = 300 * time.Millisecond
	return c
}

// frozen is a stopped virtual clock at hh:mm:ss Seoul today; Set moves it.
func frozen(hh, mm, ss int) *clock.Virtual {
	return clock.NewVirtual(clock.At(time.Now(), hh, mm).Add(time.Duration(ss)*time.Second), 0)
}

func newRelay(cfg config.Config, db *testenv.DB, pub relay.Publisher, clk clock.Clock, rec alert.Sender) *relay.Relay {
	return relay.New(cfg, db.Pool, pub, clk, rec, quietLog())
}

// addMember inserts a member; registered adds its phone to the test numbers.
func addMember(t *testing.T, db *testenv.DB, id int64, consent, registered bool) string {
	t.Helper()
	ctx := context.Background()
	phone := fmt.Sprintf("010%08d", id)
	if _, err := db.Pool.Exec(ctx, `INSERT INTO members (id, name, phone, sms_consent) VALUES ($1, $2, $3, $4)`,
		id, fmt.Sprintf("회원%d", id), phone, consent); err != nil {
		t.Fatal(err)
	}
	if registered {
		if _, err := db.Pool.Exec(ctx, `INSERT INTO registered_numbers (phone) VALUES ($1)`, phone); err != nil {
			t.Fatal(err)
		}
	}
	return phone
}

// enqueue inserts an outbox row for member (whose phone follows addMember)
// due at now and returns its id.
func enqueue(t *testing.T, db *testenv.DB, now time.Time, kind notification.Kind, member int64, scheduled time.Time) int64 {
	t.Helper()
	ctx := context.Background()
	tpl, _ := notification.TemplateFor(kind)
	key := fmt.Sprintf("%s:test:%d", kind, member)
	e := outbox.Entry{DedupKey: key, Payload: notification.Payload{
		Kind: kind, MemberID: member, Phone: fmt.Sprintf("010%08d", member), Template: tpl.Code,
		Variables: map[string]string{"name": "n"}, Advertising: kind.Advertising(),
		ScheduledDate: clock.Date(scheduled).Format(time.DateOnly),
	}}
	ins, err := outbox.Enqueue(ctx, db.Pool, now, e)
	if err != nil || !ins {
		t.Fatalf("enqueue %s: inserted=%v err=%v", key, ins, err)
	}
	var id int64
	if err := db.Pool.QueryRow(ctx, `SELECT id FROM notification_outbox WHERE dedup_key = $1`, key).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

func row(t *testing.T, db *testenv.DB, id int64) outbox.Row {
	t.Helper()
	var r outbox.Row
	if err := r.Scan(db.Pool.QueryRow(context.Background(), `SELECT `+outbox.Columns+` FROM notification_outbox WHERE id = $1`, id)); err != nil {
		t.Fatalf("read outbox row %d: %v", id, err)
	}
	return r
}

func str(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

func runOnce(t *testing.T, r *relay.Relay) relay.Stats {
	t.Helper()
	st, err := r.RunOnce(context.Background())
	if err != nil {
		t.Fatalf("RunOnce: %v", err)
	}
	return st
}

func testConfigNoDB() config.Config { return config.Default() }

package relay_test

import (
	"context"
	"testing"
	"time"

	"github.com/outboxchaos/outboxchaos/history"
	"github.com/outboxchaos/outboxchaos/system/broker"
	"github.com/outboxchaos/outboxchaos/system/config"
	"github.com/outboxchaos/outboxchaos/system/notification"
	"github.com/outboxchaos/outboxchaos/system/outbox"
	"github.com/outboxchaos/outboxchaos/system/publisher"
	"github.com/outboxchaos/outboxchaos/system/testenv"
)

// Drain overlaps batches: 230 rows with batch 50 are all published exactly
// once, in five claims, and the queue holds exactly 230 messages.
func TestDrain_PublishesEveryRowOnce(t *testing.T) {
	t.Parallel()
	db := testenv.NewMigratedSchema(t)
	prefix := testenv.NewPrefix(t)
	cfg := testConfig(db, prefix, "relay-d")
	cfg.ConfirmTimeout = 5 * time.Second
	ch := testenv.AMQPChannel(t)
	declare(t, ch, cfg)
	clk := frozen(10, 0, 0)
	now := clk.Now()
	for m := int64(1); m <= 230; m++ {
		addMember(t, db, m, true, true)
		enqueue(t, db, now, notification.GradeRenewal, m, now)
	}
	st, err := newRelay(cfg, db, realPublisher(t, cfg), clk, &testenv.AlertRecorder{}).Drain(context.Background())
	if err != nil {
		t.Fatalf("Drain: %v", err)
	}
	if st.Claimed != 230 || st.Published != 230 || st.Failed != 0 {
		t.Fatalf("stats %+v, want 230 claimed and published", st)
	}
	var published int
	if err := db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM notification_outbox WHERE status = 'PUBLISHED'`).Scan(&published); err != nil || published != 230 {
		t.Fatalf("%d rows PUBLISHED (%v), want 230", published, err)
	}
	if depth, _, _, err := broker.Depths(ch, prefix); err != nil || depth != 230 {
		t.Fatalf("main queue depth %d (%v), want 230", depth, err)
	}
}

// Drain keeps RunOnce's rule for a returned message even when the next
// batch is already out: the returned rows are PENDING with backoff, none is
// marked PUBLISHED, and the second batch's returns are not lost.
func TestDrain_ReturnedMessagesAreNotPublished(t *testing.T) {
	t.Parallel()
	db := testenv.NewMigratedSchema(t)
	prefix := testenv.NewPrefix(t)
	cfg := testConfig(db, prefix, "relay-d")
	cfg.BatchSize = 10
	cfg.ConfirmTimeout = 5 * time.Second // generous: a late confirm would be an indefinite outcome, not a return
	ch := testenv.AMQPChannel(t)
	n := declare(t, ch, cfg)
	if err := ch.QueueUnbind(n.Main, broker.KeySend, n.Exchange, nil); err != nil {
		t.Fatal(err)
	}
	clk := frozen(10, 0, 0)
	now := clk.Now()
	for m := int64(1); m <= 25; m++ {
		addMember(t, db, m, true, true)
		enqueue(t, db, now, notification.GradeRenewal, m, now)
	}
	st, err := newRelay(cfg, db, realPublisher(t, cfg), clk, &testenv.AlertRecorder{}).Drain(context.Background())
	if err != nil {
		t.Fatalf("Drain: %v", err)
	}
	if st.Published != 0 || st.Failed != 25 {
		t.Fatalf("stats %+v, want all 25 returned and failed", st)
	}
	rows, err := outbox.All(context.Background(), db.Pool)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.Status != history.OutboxPending || r.Attempts != 1 {
			t.Fatalf("row %d is %s after %d attempts, want PENDING after 1", r.ID, r.Status, r.Attempts)
		}
	}
}

// The largest batch the configuration lets a draining relay claim is one
// publisher window: a batch of config.MaxDrainBatch rows is published whole
// (one larger was refused by the publisher on every run, so nothing was
// ever sent; config.Validate now rejects it).
func TestDrain_LargestAllowedBatchIsPublished(t *testing.T) {
	t.Parallel()
	if config.MaxDrainBatch != publisher.MaxWindow {
		t.Fatalf("config.MaxDrainBatch %d, publisher.MaxWindow %d: keep them equal", config.MaxDrainBatch, publisher.MaxWindow)
	}
	db := testenv.NewMigratedSchema(t)
	prefix := testenv.NewPrefix(t)
	cfg := testConfig(db, prefix, "relay-max")
	cfg.ConfirmTimeout, cfg.BatchSize, cfg.RelayDrain = 10*time.Second, config.MaxDrainBatch, true
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	ch := testenv.AMQPChannel(t)
	declare(t, ch, cfg)
	clk := frozen(10, 0, 0)
	now := clk.Now()
	n := int64(config.MaxDrainBatch)
	for m := int64(1); m <= n; m++ {
		addMember(t, db, m, true, true)
		enqueue(t, db, now, notification.GradeRenewal, m, now)
	}
	st, err := newRelay(cfg, db, realPublisher(t, cfg), clk, &testenv.AlertRecorder{}).Drain(context.Background())
	if err != nil {
		t.Fatalf("Drain: %v", err)
	}
	if st.Published != int(n) || st.Failed != 0 {
		t.Fatalf("stats %+v, want %d published", st, n)
	}
}

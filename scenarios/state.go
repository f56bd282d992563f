package scenarios

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/outboxchaos/outboxchaos/system/app"
	"github.com/outboxchaos/outboxchaos/system/broker"
	"github.com/outboxchaos/outboxchaos/system/clock"
	"github.com/outboxchaos/outboxchaos/system/config"
	"github.com/outboxchaos/outboxchaos/system/inbox"
	"github.com/outboxchaos/outboxchaos/system/notification"
	"github.com/outboxchaos/outboxchaos/system/outbox"
)

func appMigrate(ctx context.Context, c config.Config) error { return app.Migrate(ctx, c) }

// Now is the scenario's virtual time.
func (e *Env) Now() time.Time {
	c, err := clock.Parse(e.Cfg.Clock)
	if err != nil {
		return time.Now()
	}
	return c.Now()
}

// ClockIn returns a clock setting that reads the scenario's virtual time
// plus d: a pod given it runs d later than the others (a clock step).
func (e *Env) ClockIn(d time.Duration) string {
	return clock.NewVirtual(e.Now().Add(d), 1).Setting()
}

// deferredHorizon: a PENDING row due this far past the virtual now is
// deferred (the ad cut-off), not stuck.
const deferredHorizon = time.Hour

// WaitSettled waits for quiescence: no row PENDING (unless deferred) or
// PUBLISHING, no inbox row SENDING, main and retry queues empty, and every
// PUBLISHED row accounted for by an inbox row, a parked copy or a worker
// skip.
func (e *Env) WaitSettled(ctx context.Context, timeout time.Duration) error {
	return e.WaitFor(ctx, timeout, "quiescence", func(ctx context.Context) (bool, error) {
		s, err := e.Snapshot(ctx)
		if err != nil {
			return false, err
		}
		return quiescent(s), nil
	})
}

func quiescent(s State) bool {
	if s.Queues.Main > 0 || s.Queues.Retry > 0 {
		return false
	}
	in := map[string]string{}
	for _, r := range s.Inbox {
		if r.Status == inbox.StatusSending {
			return false
		}
		in[r.MessageID] = r.Status
	}
	parked := map[string]bool{}
	for _, p := range s.Parked {
		parked[p.MessageID] = true
	}
	skipped := map[string]bool{}
	for _, m := range s.WorkerSkips {
		skipped[m] = true
	}
	for _, r := range s.Outbox {
		switch r.Status {
		case outbox.StatusPublishing:
			return false
		case outbox.StatusPending:
			if !r.Deferred {
				return false
			}
		case outbox.StatusPublished:
			mid := messageID(r.ID)
			if in[mid] == "" && !parked[mid] && !skipped[mid] {
				return false
			}
		}
	}
	return true
}

// Snapshot reads the final state: rows, ledger, alerts, queues, parked
// messages (read and left in place), registered numbers, intents.
func (e *Env) Snapshot(ctx context.Context) (State, error) {
	var s State
	now := e.Now()
	rows, err := outbox.All(ctx, e.Pool)
	if err != nil {
		return s, err
	}
	for _, r := range rows {
		o := OutboxRow{ID: r.ID, DedupKey: r.DedupKey, Kind: r.Kind, Status: r.Status, Attempts: r.Attempts}
		if r.StatusReason != nil {
			o.Reason = *r.StatusReason
		}
		o.Deferred = r.Status == outbox.StatusPending && r.NextAttemptAt.After(now.Add(deferredHorizon))
		s.Outbox = append(s.Outbox, o)
	}
	hist, err := inbox.All(ctx, e.Pool)
	if err != nil {
		return s, err
	}
	for _, h := range hist {
		s.Inbox = append(s.Inbox, InboxRow{MessageID: h.MessageID, OutboxID: h.OutboxID, DedupKey: h.DedupKey, Status: h.Status})
	}
	for _, l := range e.Vendor.Ledger() {
		s.Ledger = append(s.Ledger, LedgerEntry{RefKey: l.RefKey, Phone: l.Phone})
	}
	for _, a := range e.Sink.Alerts() {
		rec := AlertRecord{}
		rec.Kind, _ = a.Fields["kind"].(string)
		if n, ok := a.Fields["outbox_id"].(json.Number); ok {
			rec.OutboxID, _ = n.Int64()
		}
		rec.MessageID, _ = a.Fields["message_id"].(string)
		rec.DedupKey, _ = a.Fields["dedup_key"].(string)
		rec.Reason, _ = a.Fields["reason"].(string)
		s.Alerts = append(s.Alerts, rec)
	}
	if s.Parked, s.Queues, err = e.queues(); err != nil {
		return s, err
	}
	q, err := e.Pool.Query(ctx, `SELECT phone FROM registered_numbers ORDER BY phone`)
	if err != nil {
		return s, fmt.Errorf("read registered numbers: %w", err)
	}
	for q.Next() {
		var p string
		if err := q.Scan(&p); err != nil {
			q.Close()
			return s, fmt.Errorf("scan registered number: %w", err)
		}
		s.Registered = append(s.Registered, p)
	}
	q.Close()
	s.Production = e.Cfg.Production
	for _, ev := range e.Events("skip") {
		if m := ev.Str("message_id"); m != "" {
			s.WorkerSkips = append(s.WorkerSkips, m)
		}
	}
	s.Intents, err = e.intents(ctx)
	return s, err
}

// queues reads the depths and the parked messages (fetched, then returned
// to the queue when the channel closes).
func (e *Env) queues() (parked []ParkedRecord, d QueueDepths, err error) {
	err = e.withChannel(func(ch *amqp.Channel) error {
		m, r, p, derr := broker.Depths(ch, e.SB.Prefix)
		if derr != nil {
			// Queues not declared yet (no worker ran): nothing queued.
			return nil
		}
		d = QueueDepths{Main: m, Retry: r, Parking: p}
		n := broker.NamesFor(e.SB.Prefix)
		for i := 0; i < p; i++ {
			msg, ok, gerr := ch.Get(n.Parking, false)
			if gerr != nil {
				return fmt.Errorf("read parking queue: %w", gerr)
			}
			if !ok {
				break
			}
			reason, _ := msg.Headers[broker.HeaderFailureReason].(string)
			parked = append(parked, ParkedRecord{MessageID: msg.MessageId, Reason: reason})
		}
		return nil
	})
	return parked, d, err
}

// intents derives the dedup keys the business rows call for, for the kinds
// the scenario enqueues.
func (e *Env) intents(ctx context.Context) ([]string, error) {
	kinds := e.Scenario.Kinds
	if len(kinds) == 0 {
		kinds = notification.Kinds
	}
	var out []string
	for _, k := range kinds {
		var q string
		switch k {
		case notification.GradeRenewal:
			q = `SELECT 'GRADE_RENEWAL:' || id FROM grade_histories`
		case notification.MonthlyAwardsWinning:
			q = `SELECT 'MONTHLY_AWARDS_WINNING:' || id FROM award_winnings`
		case notification.MonthlyAwardsClosing:
			q = `SELECT 'MONTHLY_AWARDS_CLOSING:' || id || ':' || deadline::text FROM award_winnings`
		case notification.MissionReminder:
			q = `SELECT 'MISSION_PARTICIPATION_REMINDER:' || day::text || ':' || member_id FROM mission_targets`
		case notification.GradeLockIn:
			q = `SELECT 'GRADE_LOCK_IN:' || month || ':' || member_id FROM lock_in_targets`
		case notification.AnniversaryCoupon:
			q = `SELECT 'ANNIVERSARY_COUPON:' || id FROM coupons`
		}
		rows, err := e.Pool.Query(ctx, q)
		if err != nil {
			return nil, fmt.Errorf("derive intents of %s: %w", k, err)
		}
		for rows.Next() {
			var key string
			if err := rows.Scan(&key); err != nil {
				rows.Close()
				return nil, fmt.Errorf("scan intent: %w", err)
			}
			out = append(out, key)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("derive intents of %s: %w", k, err)
		}
	}
	return out, nil
}

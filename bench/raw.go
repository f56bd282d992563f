package bench

import (
	"context"
	"fmt"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/outboxchaos/outboxchaos/history"
	"github.com/outboxchaos/outboxchaos/system/broker"
	"github.com/outboxchaos/outboxchaos/system/inbox"
	"github.com/outboxchaos/outboxchaos/system/notification"
	"github.com/outboxchaos/outboxchaos/system/relay"
)

// confirmWait bounds the wait for one confirm in the raw measurements.
const confirmWait = 30 * time.Second

// publishWindow publishes the messages for outbox ids 1..count to exchange
// with routing key "send", keeping at most window unconfirmed (a sliding
// window: a new publish goes out as soon as the oldest is confirmed), with
// the properties system/publisher uses: mandatory, persistent, JSON,
// message_id = notification.MessageID(id). lat, if set, gets each message's
// publish-to-confirm time. It fails on a nack or a returned message.
func (e *Env) publishWindow(ctx context.Context, exchange string, count, window int, lat *Latencies) (time.Duration, error) {
	conn, ch, err := dial(e.Cfg.AMQPURL)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	if err := ch.Confirm(false); err != nil {
		return 0, fmt.Errorf("enable publisher confirms: %w", err)
	}
	returns := ch.NotifyReturn(make(chan amqp.Return, 1))
	returned := make(chan int, 1)
	go func() {
		n := 0
		for range returns {
			n++
		}
		returned <- n
	}()
	bodies := make([][]byte, count)
	for i := range bodies {
		bodies[i] = e.Body(int64(i + 1))
	}
	type pending struct {
		dc *amqp.DeferredConfirmation
		at time.Time
	}
	ring := make([]pending, window)
	head, inFlight := 0, 0
	wait := func() error {
		p := ring[head]
		head = (head + 1) % window
		inFlight--
		wctx, cancel := context.WithTimeout(ctx, confirmWait)
		defer cancel()
		ack, err := p.dc.WaitContext(wctx)
		if err != nil {
			return fmt.Errorf("wait for confirm: %w", err)
		}
		if !ack {
			return fmt.Errorf("broker nacked a publish")
		}
		if lat != nil {
			lat.Add(time.Since(p.at), 1)
		}
		return nil
	}
	start := time.Now()
	for i := range count {
		if inFlight == window {
			if err := wait(); err != nil {
				return 0, err
			}
		}
		at := time.Now()
		dc, err := ch.PublishWithDeferredConfirmWithContext(ctx, exchange, broker.KeySend, true, false, amqp.Publishing{
			MessageId:    notification.MessageID(int64(i + 1)),
			DeliveryMode: amqp.Persistent,
			ContentType:  "application/json",
			Timestamp:    at,
			Body:         bodies[i],
		})
		if err != nil {
			return 0, fmt.Errorf("publish message %d: %w", i+1, err)
		}
		ring[(head+inFlight)%window] = pending{dc, at}
		inFlight++
	}
	for inFlight > 0 {
		if err := wait(); err != nil {
			return 0, err
		}
	}
	elapsed := time.Since(start)
	_ = ch.Close()
	if n := <-returned; n > 0 {
		return 0, fmt.Errorf("%d messages returned unroutable", n)
	}
	return elapsed, nil
}

// RawPublish publishes count messages of the relay's size to the real
// topology (direct exchange → quorum main queue) with confirms and a sliding
// window of window messages in flight, and checks the queue holds them all.
func RawPublish(ctx context.Context, e *Env, id string, count, window int) (res Result) {
	res = Result{ID: id, Group: groupRaw, Latency: "publish → confirm"}
	if window == 1 {
		res.Name = "RabbitMQ publish + confirm, wait for each (quorum, persistent)"
	} else {
		res.Name = fmt.Sprintf("RabbitMQ publish + confirm, %d in flight (quorum, persistent)", window)
	}
	cfg, err := e.Topology("rawpub")
	defer e.dropTopology(cfg.Prefix, &res)
	if err != nil {
		return res.fail(err)
	}
	var lat Latencies
	cpu0 := sampleCPU()
	elapsed, err := e.publishWindow(ctx, broker.NamesFor(cfg.Prefix).Exchange, count, window, &lat)
	if err != nil {
		return res.fail(err)
	}
	res.CPU, res.CPUOK = cpuSince(cpu0)
	res.finish(count, elapsed, &lat)
	depth, err := e.QueueDepth(broker.NamesFor(cfg.Prefix).Main)
	if err != nil {
		return res.fail(err)
	}
	if depth != count {
		return res.fail(fmt.Errorf("queue holds %d messages after %d confirmed publishes", depth, count))
	}
	res.Note = fmt.Sprintf("body %d B; queue holds all %d", len(e.Body(int64(count))), count)
	return res
}

// RawRelaySQL drains a backlog of n rows with the relay's two statements
// alone, no broker: relay.ClaimSQL for batch rows (SKIP LOCKED, committed),
// then relay.MarkSQL, the mark PUBLISHED of those rows.
func RawRelaySQL(ctx context.Context, e *Env, id string, n, batch int) Result {
	res := Result{ID: id, Group: groupRaw, Latency: "claim + mark of its batch",
		Name: fmt.Sprintf("relay SQL alone: claim %d (SKIP LOCKED) + mark PUBLISHED", batch)}
	if err := e.freshBacklog(ctx, n); err != nil {
		return res.fail(err)
	}
	const instance = "bench-raw-sql"
	var lat Latencies
	done := 0
	cpu0 := sampleCPU()
	start := time.Now()
	for {
		t0 := time.Now()
		now := e.Clock.Now()
		rows, err := e.Pool.Query(ctx, relay.ClaimSQL, instance, now.Add(e.Cfg.Lease), now, batch)
		if err != nil {
			return res.fail(fmt.Errorf("claim: %w", err))
		}
		var ids []int64
		for rows.Next() {
			var (
				id       int64
				key      string
				payload  []byte
				adv      bool
				sched    time.Time
				attempts int
			)
			if err := rows.Scan(&id, &key, &payload, &adv, &sched, &attempts); err != nil {
				rows.Close()
				return res.fail(fmt.Errorf("scan claimed row: %w", err))
			}
			ids = append(ids, id)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return res.fail(fmt.Errorf("claim: %w", err))
		}
		if len(ids) == 0 {
			break
		}
		tag, err := e.Pool.Exec(ctx, relay.MarkSQL, ids, instance, e.Clock.Now())
		if err != nil {
			return res.fail(fmt.Errorf("mark: %w", err))
		}
		done += int(tag.RowsAffected())
		lat.Add(time.Since(t0), len(ids))
	}
	res.finish(done, time.Since(start), &lat)
	res.CPU, res.CPUOK = cpuSince(cpu0)
	return res.check(e.verifyPublished(ctx, n))
}

// RawInboxSQL runs the worker's two inbox statements alone for n messages,
// one after the other: the claim INSERT (inbox.ClaimSQL) and the result
// UPDATE (inbox.FinishSQL), each its own commit.
func RawInboxSQL(ctx context.Context, e *Env, id string, n int) Result {
	res := Result{ID: id, Group: groupRaw, Latency: "claim INSERT + result UPDATE",
		Name: "inbox SQL alone: claim INSERT + result UPDATE"}
	if err := e.ResetOutbox(ctx); err != nil {
		return res.fail(err)
	}
	var lat Latencies
	start := time.Now()
	for i := 1; i <= n; i++ {
		t0 := time.Now()
		oid := int64(i)
		p := e.Payload(oid)
		mid := notification.MessageID(oid)
		tag, err := e.Pool.Exec(ctx, inbox.ClaimSQL, mid, oid, p.DedupKey, string(p.Kind), p.Phone, e.Clock.Now())
		if err != nil {
			return res.fail(fmt.Errorf("claim %s: %w", mid, err))
		}
		if tag.RowsAffected() != 1 {
			return res.fail(fmt.Errorf("claim %s inserted %d rows", mid, tag.RowsAffected()))
		}
		tag, err = e.Pool.Exec(ctx, inbox.FinishSQL, mid, history.InboxSent, "1000", nil, e.Clock.Now())
		if err != nil {
			return res.fail(fmt.Errorf("result %s: %w", mid, err))
		}
		if tag.RowsAffected() != 1 {
			return res.fail(fmt.Errorf("result %s updated %d rows", mid, tag.RowsAffected()))
		}
		lat.Add(time.Since(t0), 1)
	}
	res.finish(n, time.Since(start), &lat)
	return res
}

// RawConsume fills the real main queue (quorum, single active consumer)
// with n messages, then consumes them with prefetch 1 and a manual ack per
// message. The rate is over the span from the first delivery to the last
// ack; the latency is the time from one delivery to the next (the per-message
// service time with one message in flight).
func RawConsume(ctx context.Context, e *Env, id string, n int) (res Result) {
	res = Result{ID: id, Group: groupRaw, Latency: "delivery → next delivery",
		Name: "RabbitMQ consume + ack, prefetch 1 (quorum, single active consumer)"}
	cfg, err := e.Topology("rawcons")
	defer e.dropTopology(cfg.Prefix, &res)
	if err != nil {
		return res.fail(err)
	}
	names := broker.NamesFor(cfg.Prefix)
	if _, err := e.publishWindow(ctx, names.Exchange, n, 50, nil); err != nil {
		return res.fail(fmt.Errorf("fill queue: %w", err))
	}
	conn, ch, err := dial(e.Cfg.AMQPURL)
	if err != nil {
		return res.fail(err)
	}
	defer conn.Close()
	if err := ch.Qos(1, 0, false); err != nil {
		return res.fail(fmt.Errorf("set prefetch 1: %w", err))
	}
	deliveries, err := ch.Consume(names.Main, "bench-raw-consume", false, false, false, false, nil)
	if err != nil {
		return res.fail(fmt.Errorf("consume: %w", err))
	}
	var lat Latencies
	var first, prev time.Time
	idle := time.NewTimer(confirmWait)
	defer idle.Stop()
	for got := 0; got < n; got++ {
		var d amqp.Delivery
		var ok bool
		select {
		case d, ok = <-deliveries:
			if !ok {
				return res.fail(fmt.Errorf("delivery channel closed after %d of %d", got, n))
			}
		case <-idle.C:
			return res.fail(fmt.Errorf("no delivery for %s after %d of %d", confirmWait, got, n))
		case <-ctx.Done():
			return res.fail(ctx.Err())
		}
		now := time.Now()
		if got == 0 {
			first = now
		} else {
			lat.Add(now.Sub(prev), 1)
		}
		prev = now
		if err := d.Ack(false); err != nil {
			return res.fail(fmt.Errorf("ack: %w", err))
		}
		idle.Reset(confirmWait)
	}
	res.finish(n-1, time.Since(first), &lat)
	res.Msgs = n
	res.Note = "rate over n−1 intervals"
	return res
}

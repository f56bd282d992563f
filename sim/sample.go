package sim

import (
	"context"
	"fmt"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/outboxchaos/outboxchaos/scenarios"
	"github.com/outboxchaos/outboxchaos/system/broker"
)

// Sample is the pipeline's state at one virtual instant.
type Sample struct {
	At     time.Time      `json:"at"`
	Outbox map[string]int `json:"outbox"` // rows by status
	Inbox  map[string]int `json:"inbox"`  // history rows by status
	// Queue depths (ready messages): the most seen since the last sample
	// (the queues are looked at every few real milliseconds), and parking
	// as sampled.
	Main, Retry, Parking int
	VendorCalls          int // cumulative send requests
	Delivered            int // cumulative handset ledger entries
	Alerts               int // cumulative
	AlertKinds           map[string]int
}

// sampler reads Samples: two GROUP BY counts, three passive queue
// declarations, and the vendor's and alert sink's counters.
type sampler struct {
	env  *scenarios.Env
	conn *amqp.Connection
	ch   *amqp.Channel

	peekedAt          time.Time
	peakMain, peakRet int
}

// peekEvery is how often (real time) the driver's loop looks at the
// queues for their peak depths between samples.
const peekEvery = 20 * time.Millisecond

// peek records the queues' depths if it has not for peekEvery.
func (s *sampler) peek() {
	if time.Since(s.peekedAt) < peekEvery {
		return
	}
	s.peekedAt = time.Now()
	m, r, _ := s.depths()
	s.peakMain, s.peakRet = max(s.peakMain, m), max(s.peakRet, r)
}

func (s *sampler) open(env *scenarios.Env) error {
	s.env = env
	conn, _, err := broker.Dial(env.SB.AMQPURL, amqp.Config{Dial: amqp.DefaultDial(5 * time.Second)})
	if err != nil {
		return fmt.Errorf("sampler: dial broker: %w", err)
	}
	s.conn = conn
	return nil
}

func (s *sampler) close() {
	if s.conn != nil {
		_ = s.conn.Close()
	}
}

func (s *sampler) depths() (m, r, p int) {
	if s.ch == nil || s.ch.IsClosed() {
		ch, err := s.conn.Channel()
		if err != nil {
			return 0, 0, 0
		}
		s.ch = ch
	}
	m, r, p, err := broker.Depths(s.ch, s.env.SB.Prefix)
	if err != nil {
		// Not declared yet (no worker has started): nothing queued. A
		// failed passive declare closes the channel; the next look opens
		// another.
		return 0, 0, 0
	}
	return m, r, p
}

func (s *sampler) counts(ctx context.Context, table string) (map[string]int, error) {
	rows, err := s.env.DB().Query(ctx, `SELECT status, count(*) FROM `+table+` GROUP BY status`)
	if err != nil {
		return nil, fmt.Errorf("sample %s: %w", table, err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var st string
		var n int
		if err := rows.Scan(&st, &n); err != nil {
			return nil, fmt.Errorf("sample %s: %w", table, err)
		}
		out[st] = n
	}
	return out, rows.Err()
}

func (s *sampler) take(ctx context.Context, at time.Time) (Sample, error) {
	var out Sample
	var err error
	out.At = at
	if out.Outbox, err = s.counts(ctx, "notification_outbox"); err != nil {
		return out, err
	}
	if out.Inbox, err = s.counts(ctx, "notification_histories"); err != nil {
		return out, err
	}
	out.Main, out.Retry, out.Parking = s.depths()
	out.Main, out.Retry = max(out.Main, s.peakMain), max(out.Retry, s.peakRet)
	s.peakMain, s.peakRet = 0, 0
	v := s.env.Vendor()
	out.VendorCalls = v.Calls()
	out.Delivered = len(v.Ledger())
	out.AlertKinds = map[string]int{}
	for _, a := range s.env.Sink.Alerts() {
		k, _ := a.Fields["kind"].(string)
		out.AlertKinds[k]++
		out.Alerts++
	}
	return out, nil
}

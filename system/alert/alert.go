// Package alert owns operations alerts: every loss the pipeline accepts
// (EXPIRED, ERROR, parked, a lost anniversary message, a relay row at its
// fifth attempt) is announced here.
//
// Webhook posts Slack-incoming-webhook-compatible JSON ({"text": ...}) with
// an extra "outboxchaos" object naming the outbox id, message_id and
// dedup_key, so a checker can join every loss to its alert. Alerts are queued
// and sent in the background: a slow or failing webhook is logged and never
// blocks the pipeline. Close flushes what is queued, within a deadline.
package alert

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"
)

// Kinds of alert.
const (
	KindExpired           = "EXPIRED"
	KindRelayAttempts     = "RELAY_ATTEMPTS"
	KindRelayFailed       = "RELAY_FAILED"
	KindSendingTimeout    = "SENDING_TIMEOUT"
	KindVendorUnknown     = "VENDOR_UNKNOWN"
	KindResultWriteFailed = "RESULT_WRITE_FAILED"
	KindClaimReleaseFail  = "CLAIM_RELEASE_FAILED"
	KindParked            = "PARKED"
	KindAnniversaryLost   = "ANNIVERSARY_LOST"
)

// Alert is one operations alert.
type Alert struct {
	Kind      string    `json:"kind"`
	OutboxID  int64     `json:"outbox_id,omitempty"`
	MessageID string    `json:"message_id,omitempty"`
	DedupKey  string    `json:"dedup_key,omitempty"`
	Reason    string    `json:"reason,omitempty"`
	Instance  string    `json:"instance,omitempty"`
	At        time.Time `json:"at"`
}

// Text is the human line shown in Slack.
func (a Alert) Text() string {
	s := fmt.Sprintf(":rotating_light: %s", a.Kind)
	if a.OutboxID != 0 {
		s += fmt.Sprintf(" outbox=%d", a.OutboxID)
	}
	if a.MessageID != "" {
		s += " message_id=" + a.MessageID
	}
	if a.DedupKey != "" {
		s += " dedup_key=" + a.DedupKey
	}
	if a.Reason != "" {
		s += " reason=" + a.Reason
	}
	return s
}

// Sender raises alerts. Send never blocks for long and never fails the
// caller.
type Sender interface {
	Send(ctx context.Context, a Alert)
}

// Webhook sends alerts to a Slack-compatible URL. An empty URL only logs.
type Webhook struct {
	url     string
	log     *slog.Logger
	client  *http.Client
	queue   chan Alert
	wg      sync.WaitGroup
	once    sync.Once
	closing chan struct{}
}

// NewWebhook starts a sender posting to url with the given per-request
// timeout.
func NewWebhook(url string, timeout time.Duration, log *slog.Logger) *Webhook {
	w := &Webhook{
		url:     url,
		log:     log,
		client:  &http.Client{Timeout: timeout},
		queue:   make(chan Alert, 1024),
		closing: make(chan struct{}),
	}
	w.wg.Add(1)
	go w.loop()
	return w
}

// Send logs the alert (event "alert", so a harness sees it even when the
// webhook is down) and queues it for the webhook. A full queue drops the
// webhook delivery, with an error log.
func (w *Webhook) Send(_ context.Context, a Alert) {
	w.log.Warn(a.Text(), "event", "alert", "kind", a.Kind, "outbox_id", a.OutboxID,
		"message_id", a.MessageID, "dedup_key", a.DedupKey, "reason", a.Reason)
	if w.url == "" {
		return
	}
	select {
	case w.queue <- a:
	default:
		w.log.Error("alert queue full, webhook delivery dropped", "event", "alert-dropped", "message_id", a.MessageID)
	}
}

func (w *Webhook) loop() {
	defer w.wg.Done()
	for {
		select {
		case a := <-w.queue:
			w.post(a)
		case <-w.closing:
			for {
				select {
				case a := <-w.queue:
					w.post(a)
				default:
					return
				}
			}
		}
	}
}

type body struct {
	Text        string `json:"text"`
	OutboxChaos Alert  `json:"outboxchaos"`
}

func (w *Webhook) post(a Alert) {
	b, err := json.Marshal(body{Text: a.Text(), OutboxChaos: a})
	if err != nil {
		w.log.Error("encode alert", "err", err)
		return
	}
	resp, err := w.client.Post(w.url, "application/json", bytes.NewReader(b))
	if err != nil {
		w.log.Error("deliver alert", "event", "alert-failed", "err", err, "message_id", a.MessageID)
		return
	}
	_ = resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		w.log.Error("deliver alert", "event", "alert-failed", "status", resp.StatusCode, "message_id", a.MessageID)
	}
}

// Close sends what is queued (each post bounded by the timeout) and stops.
// Safe to call twice.
func (w *Webhook) Close() {
	w.once.Do(func() { close(w.closing) })
	w.wg.Wait()
}

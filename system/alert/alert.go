// Package alert owns operations alerts: every loss the pipeline accepts
// (EXPIRED, ERROR, parked, a lost anniversary message, a relay row at its
// fifth attempt) is announced here.
//
// Webhook posts Slack-incoming-webhook-compatible JSON ({"text": ...}) with
// an extra "outboxchaos" object naming the outbox id, message_id and
// dedup_key, so a checker can join every loss to its alert. A slow or failing
// webhook is logged and delays the pipeline by at most the alert timeout; it
// never fails it.
package alert

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/outboxchaos/outboxchaos/history"
	"github.com/outboxchaos/outboxchaos/system/crashpoint"
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
//
// Send posts synchronously, bounded by the timeout: an alert that was
// queued in memory would die with a process killed right after the state
// change it announces, leaving an ERROR row nobody was told about. The
// pipeline waits at most the timeout; a failed delivery is logged and the
// pipeline goes on.
type Webhook struct {
	url    string
	log    *slog.Logger
	client *http.Client
}

// NewWebhook returns a sender posting to url with the given per-request
// timeout. It owns its transport, so Close drops only its own idle
// connections, never those of http.DefaultTransport's other users.
func NewWebhook(url string, timeout time.Duration, log *slog.Logger) *Webhook {
	return &Webhook{url: url, log: log, client: &http.Client{
		// Each post is a crash point (system/crashpoint).
		Transport: crashpoint.Transport("alert", &http.Transport{MaxIdleConnsPerHost: 4, IdleConnTimeout: 30 * time.Second}),
		Timeout:   timeout,
	}}
}

// Send logs the alert (event "alert", so a harness sees it even when the
// webhook is down) and posts it to the webhook.
func (w *Webhook) Send(ctx context.Context, a Alert) {
	w.log.Warn(a.Text(), history.KeyEvent, history.Alert, history.KeyKind, a.Kind, history.KeyOutboxID, a.OutboxID,
		history.KeyMessageID, a.MessageID, history.KeyDedupKey, a.DedupKey, history.KeyReason, a.Reason)
	if w.url == "" {
		return
	}
	w.post(context.WithoutCancel(ctx), a)
}

type body struct {
	Text        string `json:"text"`
	OutboxChaos Alert  `json:"outboxchaos"`
}

func (w *Webhook) post(ctx context.Context, a Alert) {
	b, err := json.Marshal(body{Text: a.Text(), OutboxChaos: a})
	if err != nil {
		w.log.Error("encode alert", "err", err)
		return
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url, bytes.NewReader(b))
	if err != nil {
		w.log.Error("build alert request", history.KeyEvent, history.AlertFailed, history.KeyErr, err)
		return
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := w.client.Do(req)
	if err != nil {
		w.log.Error("deliver alert", history.KeyEvent, history.AlertFailed, history.KeyErr, err, history.KeyMessageID, a.MessageID)
		return
	}
	_ = resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		w.log.Error("deliver alert", history.KeyEvent, history.AlertFailed, history.KeyStatus, resp.StatusCode, history.KeyMessageID, a.MessageID)
	}
}

// Close releases idle connections. Safe to call twice.
func (w *Webhook) Close() { w.client.CloseIdleConnections() }

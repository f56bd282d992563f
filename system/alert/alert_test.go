package alert_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/outboxchaos/outboxchaos/history"
	"github.com/outboxchaos/outboxchaos/system/alert"
)

// TestWebhookPostsSlackJSONWithJoinFields: the body is Slack-compatible
// ({"text": …}) and names the outbox id, message_id and dedup_key.
func TestWebhookPostsSlackJSONWithJoinFields(t *testing.T) {
	t.Parallel()
	got := make(chan map[string]any, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m map[string]any
		_ = json.NewDecoder(r.Body).Decode(&m)
		got <- m
	}))
	defer srv.Close()
	w := alert.NewWebhook(srv.URL, time.Second, slog.New(slog.NewTextHandler(io.Discard, nil)))
	defer w.Close()
	w.Send(context.Background(), alert.Alert{Kind: history.AlertVendorUnknown, OutboxID: 7,
		MessageID: "notification-outbox-7", DedupKey: "GRADE_RENEWAL:7", Reason: "TIMEOUT"})
	m := <-got
	if text, _ := m["text"].(string); text == "" {
		t.Errorf("no Slack text in %v", m)
	}
	f, _ := m["outboxchaos"].(map[string]any)
	if f["kind"] != "VENDOR_UNKNOWN" || f["outbox_id"] != 7.0 || f["message_id"] != "notification-outbox-7" || f["dedup_key"] != "GRADE_RENEWAL:7" {
		t.Errorf("join fields missing: %v", f)
	}
}

// TestWebhookFailureNeverBlocksPastTheTimeout: a hanging webhook costs at
// most the timeout and Send returns normally.
func TestWebhookFailureNeverBlocksPastTheTimeout(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	w := alert.NewWebhook(srv.URL, 100*time.Millisecond, slog.New(slog.NewTextHandler(io.Discard, nil)))
	done := make(chan struct{})
	go func() {
		w.Send(context.Background(), alert.Alert{Kind: history.AlertExpired, OutboxID: 1})
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Send blocked far past its 100 ms timeout")
	}
}

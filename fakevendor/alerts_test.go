package fakevendor_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/outboxchaos/outboxchaos/fakevendor"
)

func postAlert(t *testing.T, url, body string) (int, string) {
	t.Helper()
	resp, err := hc.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("post alert: %v", err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(raw))
}

func TestAlertSinkRecordsFields(t *testing.T) {
	t.Parallel()
	sink := fakevendor.NewAlertSink()
	url, err := sink.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sink.Close() })
	if !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.HasSuffix(url, "/hooks/alerts") {
		t.Fatalf("url = %q", url)
	}

	body := `{"text":"outbox 1234567 EXPIRED","outboxchaos":{"kind":"OUTBOX_EXPIRED","outbox_id":1234567,"message_id":"notification-outbox-1234567","dedup_key":"GRADE_RENEWAL:9"}}`
	if s, b := postAlert(t, url, body); s != http.StatusOK || b != "ok" {
		t.Fatalf("post = %d %q, want 200 ok", s, b)
	}
	alerts := sink.Alerts()
	if len(alerts) != 1 {
		t.Fatalf("alerts = %+v, want one", alerts)
	}
	a := alerts[0]
	if a.Text != "outbox 1234567 EXPIRED" || a.Fields["kind"] != "OUTBOX_EXPIRED" || a.Fields["dedup_key"] != "GRADE_RENEWAL:9" ||
		a.Fields["message_id"] != "notification-outbox-1234567" || a.At.IsZero() || string(a.Raw) != body {
		t.Fatalf("alert = %+v", a)
	}
	if got := fmt.Sprint(a.Fields["outbox_id"]); got != "1234567" {
		t.Fatalf("outbox_id prints as %q, want 1234567", got)
	}

	// GET lists what was received.
	resp, err := hc.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var listed []fakevendor.ReceivedAlert
	if err := json.NewDecoder(resp.Body).Decode(&listed); err != nil || len(listed) != 1 || listed[0].Fields["kind"] != "OUTBOX_EXPIRED" {
		t.Fatalf("GET = %+v %v", listed, err)
	}

	if s, _ := postAlert(t, url, `{"text":`); s != http.StatusBadRequest {
		t.Fatalf("malformed alert = %d, want 400", s)
	}
	if n := len(sink.Alerts()); n != 1 {
		t.Fatalf("alerts = %d after a malformed post, want 1", n)
	}
}

func TestAlertSinkFailing(t *testing.T) {
	t.Parallel()
	sink := fakevendor.NewAlertSink()
	url, err := sink.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sink.Close() })

	sink.SetFailing(true)
	if s, _ := postAlert(t, url, `{"text":"lost"}`); s != http.StatusInternalServerError {
		t.Fatalf("failing sink = %d, want 500", s)
	}
	if len(sink.Alerts()) != 0 || sink.Rejected() != 1 {
		t.Fatalf("alerts %d rejected %d, want 0 and 1", len(sink.Alerts()), sink.Rejected())
	}
	sink.SetFailing(false)
	if s, _ := postAlert(t, url, `{"text":"kept"}`); s != http.StatusOK {
		t.Fatalf("recovered sink = %d, want 200", s)
	}
	if a := sink.Alerts(); len(a) != 1 || a[0].Text != "kept" {
		t.Fatalf("alerts = %+v, want only the one sent after recovery", a)
	}
}

func TestAlertSinkStartRefusesNonLoopback(t *testing.T) {
	t.Parallel()
	sink := fakevendor.NewAlertSink()
	t.Cleanup(func() { _ = sink.Close() })
	if _, err := sink.Start("0.0.0.0:0"); err == nil {
		t.Fatal("Start(0.0.0.0:0) = nil, want error")
	}
}

package fakevendor

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// AlertPath is the path of the alert webhook served by AlertSink.
const AlertPath = "/hooks/alerts"

// ReceivedAlert is one alert the sink accepted.
type ReceivedAlert struct {
	Text string `json:"text"`
	// Fields is the "outboxchaos" object of the body (kind, outbox_id,
	// message_id, dedup_key, ...). Numbers are json.Number, so an id prints
	// as written (fmt.Sprint gives "1234567", not "1.234567e+06").
	Fields map[string]any  `json:"fields"`
	At     time.Time       `json:"at"`
	Raw    json.RawMessage `json:"raw"`
}

// AlertSink is a Slack-incoming-webhook-compatible receiver that keeps every
// alert it is sent. It is safe for concurrent use.
type AlertSink struct {
	handler http.Handler

	mu       sync.Mutex
	alerts   []ReceivedAlert
	failing  bool
	rejected int
	srv      *http.Server
	done     chan struct{}
}

// NewAlertSink returns a sink that accepts alerts.
func NewAlertSink() *AlertSink {
	a := &AlertSink{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+AlertPath, a.handlePost)
	mux.HandleFunc("GET "+AlertPath, a.handleList)
	a.handler = mux
	return a
}

// Handler returns the webhook handler: POST AlertPath takes
// {"text":"...","outboxchaos":{...}} and answers 200 "ok"; GET AlertPath
// lists the received alerts as JSON.
func (a *AlertSink) Handler() http.Handler { return a.handler }

// Start listens on addr (a loopback address such as "127.0.0.1:0"), serves
// in the background and returns the webhook URL
// "http://127.0.0.1:PORT/hooks/alerts".
func (a *AlertSink) Start(addr string) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.srv != nil {
		return "", errors.New("alert sink: already started")
	}
	ln, err := listenLoopback(addr)
	if err != nil {
		return "", fmt.Errorf("alert sink: %w", err)
	}
	a.srv = &http.Server{Handler: a.handler, ReadHeaderTimeout: 10 * time.Second}
	a.done = make(chan struct{})
	go func(srv *http.Server, done chan struct{}) {
		defer close(done)
		_ = srv.Serve(ln) // returns http.ErrServerClosed after Close
	}(a.srv, a.done)
	return "http://" + ln.Addr().String() + AlertPath, nil
}

// Close stops serving, if Start was called. It is safe to call more than once.
func (a *AlertSink) Close() error {
	a.mu.Lock()
	srv, done := a.srv, a.done
	a.mu.Unlock()
	if srv == nil {
		return nil
	}
	err := srv.Close()
	<-done
	if err != nil {
		return fmt.Errorf("alert sink: close: %w", err)
	}
	return nil
}

// SetFailing makes the sink answer 500 to every alert (without keeping it)
// while failing is true, to prove alert failures never block the pipeline.
func (a *AlertSink) SetFailing(failing bool) {
	a.mu.Lock()
	a.failing = failing
	a.mu.Unlock()
}

// Alerts returns every accepted alert, in arrival order.
func (a *AlertSink) Alerts() []ReceivedAlert {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]ReceivedAlert(nil), a.alerts...)
}

// Rejected returns how many alerts were answered 500 because the sink was
// failing.
func (a *AlertSink) Rejected() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.rejected
}

type alertBody struct {
	Text        string         `json:"text"`
	OutboxChaos map[string]any `json:"outboxchaos"`
}

func (a *AlertSink) handlePost(w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		http.Error(w, "read body", http.StatusBadRequest)
		return
	}
	a.mu.Lock()
	failing := a.failing
	if failing {
		a.rejected++
	}
	a.mu.Unlock()
	if failing {
		http.Error(w, "internal_error", http.StatusInternalServerError)
		return
	}
	var body alertBody
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&body); err != nil || !json.Valid(raw) {
		http.Error(w, "invalid_payload", http.StatusBadRequest) // Slack's answer
		return
	}
	if body.Text == "" && len(body.OutboxChaos) == 0 {
		http.Error(w, "no_text", http.StatusBadRequest) // Slack's answer
		return
	}
	a.mu.Lock()
	a.alerts = append(a.alerts, ReceivedAlert{Text: body.Text, Fields: body.OutboxChaos, At: time.Now(), Raw: json.RawMessage(raw)})
	a.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = io.WriteString(w, "ok")
}

func (a *AlertSink) handleList(w http.ResponseWriter, _ *http.Request) {
	alerts := a.Alerts()
	if alerts == nil {
		alerts = []ReceivedAlert{}
	}
	writeJSON(w, http.StatusOK, alerts)
}

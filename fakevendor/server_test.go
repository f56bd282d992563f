package fakevendor_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/outboxchaos/outboxchaos/fakevendor"
	"github.com/outboxchaos/outboxchaos/system/testenv"
)

const (
	account  = "acct"
	password = "pw"
)

// newServer serves fv through httptest; fv.Close runs before the httptest
// server's Close so hung requests are released first.
func newServer(t *testing.T, opts fakevendor.Options) (*fakevendor.Server, string) {
	t.Helper()
	opts.Account, opts.Password = account, password
	fv := fakevendor.New(opts)
	ts := httptest.NewServer(fv.Handler())
	t.Cleanup(ts.Close)
	t.Cleanup(func() { _ = fv.Close() })
	return fv, ts.URL
}

// started starts a server on a loopback port, as another process would reach
// it, and closes it in t.Cleanup; it returns the server and its base URL.
func started(t *testing.T, opts fakevendor.Options) (*fakevendor.Server, string) {
	t.Helper()
	opts.Account, opts.Password = account, password
	fv := fakevendor.New(opts)
	base, err := fv.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fv.Close() })
	return fv, base
}

var hc = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}

// token fetches an access token; it returns the HTTP status and the token.
func token(t *testing.T, base string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/v1/token", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth(account, password)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("token request: %v", err)
	}
	defer resp.Body.Close()
	var a struct {
		AccessToken string `json:"accesstoken"`
		Type        string `json:"type"`
		Expired     string `json:"expired"`
	}
	if resp.StatusCode == http.StatusOK {
		if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
			t.Fatalf("decode token answer: %v", err)
		}
		if a.AccessToken == "" || a.Type != "Bearer" || len(a.Expired) != len("20060102150405") {
			t.Fatalf("token answer %+v: want accesstoken, type Bearer, expired YYYYMMDDhhmmss", a)
		}
	}
	return resp.StatusCode, a.AccessToken
}

func mustToken(t *testing.T, base string) string {
	t.Helper()
	status, tok := token(t, base)
	if status != http.StatusOK {
		t.Fatalf("token: HTTP %d", status)
	}
	return tok
}

type sendAnswer struct {
	Code       string `json:"code"`
	RefKey     string `json:"refkey"`
	MessageKey string `json:"messagekey"`
}

func sendBody(refkey, text string) []byte {
	b, _ := json.Marshal(map[string]any{
		"account": account, "refkey": refkey, "type": "at", "from": "0212345678", "to": "01000000000",
		"content":       map[string]any{"at": map[string]string{"senderkey": "outboxchaos", "templatecode": "T1", "message": text}},
		"resend":        map[string]string{"first": "sms"},
		"resendcontent": map[string]any{"sms": map[string]string{"message": "fallback"}},
	})
	return b
}

// send makes one send call; err is set when no answer came back.
func send(ctx context.Context, base, tok, refkey string) (int, sendAnswer, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v3/message", bytes.NewReader(sendBody(refkey, "hello "+refkey)))
	if err != nil {
		return 0, sendAnswer{}, err
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := hc.Do(req)
	if err != nil {
		return 0, sendAnswer{}, err
	}
	defer resp.Body.Close()
	var a sendAnswer
	_ = json.NewDecoder(resp.Body).Decode(&a)
	return resp.StatusCode, a, nil
}

func mustStatus(t *testing.T, base, tok, refkey string) int {
	t.Helper()
	status, _, err := send(context.Background(), base, tok, refkey)
	if err != nil {
		t.Fatalf("send %s: %v", refkey, err)
	}
	return status
}

func refkeys(entries []fakevendor.Entry) []string {
	var out []string
	for _, e := range entries {
		out = append(out, e.RefKey)
	}
	return out
}

// Close must release hung requests well before HangTimeout.
func TestCloseReleasesHungRequests(t *testing.T) {
	t.Parallel()
	fv, base := started(t, fakevendor.Options{HangTimeout: time.Minute})
	if err := fv.SetDefault(fakevendor.Hang); err != nil {
		t.Fatal(err)
	}
	tok := mustToken(t, base)
	errc := make(chan error, 1)
	go func() {
		_, _, err := send(context.Background(), base, tok, "k")
		errc <- err
	}()
	testenv.Eventually(t, 5*time.Second, "the send to arrive", func() bool { return fv.Calls() == 1 })
	closed := make(chan error, 1)
	go func() { closed <- fv.Close() }()
	for _, c := range []chan error{closed, errc} {
		select {
		case <-c:
		case <-time.After(5 * time.Second):
			t.Fatal("Close did not release the hung request")
		}
	}
	if fv.Count("k") != 0 || fv.Fired()[fakevendor.Hang] != 1 {
		t.Fatalf("count %d fired %v, want 0 and hang once", fv.Count("k"), fv.Fired())
	}
}

// Served through Handler (no Start), Close must still release a hung request,
// and the client must see a broken connection, not an answer.
func TestCloseReleasesHungRequestsUnderHandler(t *testing.T) {
	t.Parallel()
	fv, base := newServer(t, fakevendor.Options{HangTimeout: time.Minute})
	if err := fv.AddRule(fakevendor.Rule{RefKey: "k", Mode: fakevendor.AcceptHang}); err != nil {
		t.Fatal(err)
	}
	tok := mustToken(t, base)
	type result struct {
		status int
		err    error
	}
	done := make(chan result, 1)
	go func() {
		status, _, err := send(context.Background(), base, tok, "k")
		done <- result{status, err}
	}()
	testenv.Eventually(t, 5*time.Second, "the send to arrive", func() bool { return fv.Calls() == 1 })
	if err := fv.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case res := <-done:
		if res.err == nil {
			t.Fatalf("released request answered HTTP %d, want the connection closed", res.status)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not release the hung request")
	}
	if fv.Count("k") != 1 {
		t.Fatalf("count = %d, want 1", fv.Count("k"))
	}
}

func TestStartListensOnLoopbackOnly(t *testing.T) {
	t.Parallel()
	fv := fakevendor.New(fakevendor.Options{})
	t.Cleanup(func() { _ = fv.Close() })
	if _, err := fv.Start("0.0.0.0:0"); err == nil {
		t.Fatal("Start(0.0.0.0:0) = nil, want error: only loopback is allowed")
	}
	base, err := fv.Start("127.0.0.1:0")
	if err != nil || !strings.HasPrefix(base, "http://127.0.0.1:") {
		t.Fatalf("Start = %q %v", base, err)
	}
	if _, err := fv.Start("127.0.0.1:0"); err == nil {
		t.Fatal("second Start = nil, want error")
	}
	if err := fv.Close(); err != nil {
		t.Fatal(err)
	}
	if err := fv.Close(); err != nil {
		t.Fatalf("second Close = %v", err)
	}
}

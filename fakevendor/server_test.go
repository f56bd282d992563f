package fakevendor_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/outboxchaos/outboxchaos/fakevendor"
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

// waitFor polls cond until it holds or a 5-second deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestAcceptRecordsLedgerEntry(t *testing.T) {
	t.Parallel()
	fv, base := newServer(t, fakevendor.Options{})
	tok := mustToken(t, base)
	status, a, err := send(context.Background(), base, tok, "m-1")
	if err != nil || status != http.StatusOK || a.Code != "1000" || a.RefKey != "m-1" || a.MessageKey == "" {
		t.Fatalf("send = %d %+v %v, want 200 code 1000 with refkey and messagekey", status, a, err)
	}
	led := fv.Ledger()
	if len(led) != 1 {
		t.Fatalf("ledger = %+v, want one entry", led)
	}
	e := led[0]
	if e.Seq != 1 || e.RefKey != "m-1" || e.Phone != "01000000000" || e.Text != "hello m-1" ||
		e.ContentHash != fakevendor.Hash("hello m-1") || len(e.ContentHash) != 64 || e.Call != 1 || e.At.IsZero() {
		t.Fatalf("entry = %+v", e)
	}
	if fv.Count("m-1") != 1 || fv.Calls() != 1 {
		t.Fatalf("count %d calls %d, want 1 and 1", fv.Count("m-1"), fv.Calls())
	}
	if f := fv.Fired(); len(f) != 0 {
		t.Fatalf("fired = %v, want nothing for plain accepts", f)
	}
}

func TestMessageKeysAreUniqueAndDuplicatesAreCounted(t *testing.T) {
	t.Parallel()
	fv, base := newServer(t, fakevendor.Options{})
	tok := mustToken(t, base)
	seen := map[string]bool{}
	for i := range 3 {
		_, a, err := send(context.Background(), base, tok, "dup")
		if err != nil || a.Code != "1000" {
			t.Fatalf("send %d: %+v %v", i, a, err)
		}
		if seen[a.MessageKey] {
			t.Fatalf("messagekey %q repeated", a.MessageKey)
		}
		seen[a.MessageKey] = true
	}
	if n := fv.Count("dup"); n != 3 {
		t.Fatalf("count = %d, want 3: the vendor has no idempotency key", n)
	}
}

func TestRuleByCallNumber(t *testing.T) {
	t.Parallel()
	fv, base := newServer(t, fakevendor.Options{})
	if err := fv.AddRule(fakevendor.Rule{Call: 2, Mode: fakevendor.Fail5xx}); err != nil {
		t.Fatal(err)
	}
	tok := mustToken(t, base)
	var got []int
	for _, k := range []string{"a", "b", "c"} {
		got = append(got, mustStatus(t, base, tok, k))
	}
	if fmt.Sprint(got) != "[200 503 200]" {
		t.Fatalf("statuses = %v, want [200 503 200]", got)
	}
	if r := refkeys(fv.Ledger()); fmt.Sprint(r) != "[a c]" {
		t.Fatalf("ledger refkeys = %v, want [a c]", r)
	}
	log := fv.CallLog()
	if len(log) != 3 || log[1].N != 2 || log[1].RefKey != "b" || log[1].Mode != fakevendor.Fail5xx || log[1].Accepted || !log[2].Accepted {
		t.Fatalf("call log = %+v", log)
	}
	if f := fv.Fired(); f[fakevendor.Fail5xx] != 1 {
		t.Fatalf("fired = %v, want 5xx once", f)
	}
}

func TestRuleByRefKeyWithTimes(t *testing.T) {
	t.Parallel()
	fv, base := newServer(t, fakevendor.Options{})
	if err := fv.AddRule(fakevendor.Rule{RefKey: "a", Mode: fakevendor.Status429, Times: 2}); err != nil {
		t.Fatal(err)
	}
	tok := mustToken(t, base)
	var got []int
	for _, k := range []string{"a", "b", "a", "a"} {
		got = append(got, mustStatus(t, base, tok, k))
	}
	if fmt.Sprint(got) != "[429 200 429 200]" {
		t.Fatalf("statuses = %v, want [429 200 429 200]", got)
	}
	if fv.Count("a") != 1 || fv.Fired()[fakevendor.Status429] != 2 {
		t.Fatalf("count(a) = %d fired = %v, want 1 and 429 twice", fv.Count("a"), fv.Fired())
	}
}

func TestFirstMatchingRuleWinsAndExhaustedRulesFallThrough(t *testing.T) {
	t.Parallel()
	fv, base := newServer(t, fakevendor.Options{})
	for _, r := range []fakevendor.Rule{
		{RefKey: "a", Mode: fakevendor.Status403, Times: 1},
		{Call: 1, Mode: fakevendor.Fail5xx},
		{RefKey: "a", Mode: fakevendor.Status429},
	} {
		if err := fv.AddRule(r); err != nil {
			t.Fatal(err)
		}
	}
	tok := mustToken(t, base)
	var got []int
	for range 3 {
		got = append(got, mustStatus(t, base, tok, "a"))
	}
	if fmt.Sprint(got) != "[403 429 429]" {
		t.Fatalf("statuses = %v, want [403 429 429]", got)
	}
}

func TestDefaultModeAndReset(t *testing.T) {
	t.Parallel()
	fv, base := newServer(t, fakevendor.Options{})
	if err := fv.SetDefault(fakevendor.Status403); err != nil {
		t.Fatal(err)
	}
	if err := fv.AddRule(fakevendor.Rule{RefKey: "ok", Mode: fakevendor.Accept}); err != nil {
		t.Fatal(err)
	}
	tok := mustToken(t, base)
	if s := mustStatus(t, base, tok, "x"); s != http.StatusForbidden {
		t.Fatalf("default 403: got %d", s)
	}
	if s := mustStatus(t, base, tok, "ok"); s != http.StatusOK {
		t.Fatalf("accept rule over default: got %d", s)
	}
	fv.ResetRules()
	if s := mustStatus(t, base, tok, "x"); s != http.StatusOK {
		t.Fatalf("after reset: got %d, want 200", s)
	}
	for _, m := range []fakevendor.Mode{"bogus", "", fakevendor.TokenFail} {
		if err := fv.SetDefault(m); err == nil {
			t.Errorf("SetDefault(%q) = nil, want error", m)
		}
	}
}

func TestRuleValidation(t *testing.T) {
	t.Parallel()
	fv := fakevendor.New(fakevendor.Options{})
	for _, r := range []fakevendor.Rule{
		{RefKey: "a", Mode: "bogus"},
		{Mode: fakevendor.Fail5xx},                       // neither refkey nor call
		{RefKey: "a", Call: 1, Mode: fakevendor.Fail5xx}, // both
		{RefKey: "a", Mode: fakevendor.TokenFail},        // token requests carry no refkey
		{RefKey: "a", Mode: fakevendor.Hang, Times: -1},
		{Call: -1, Mode: fakevendor.Hang},
	} {
		if err := fv.AddRule(r); err == nil {
			t.Errorf("AddRule(%+v) = nil, want error", r)
		}
	}
	for _, r := range []fakevendor.Rule{
		{Mode: fakevendor.TokenFail},
		{Call: 2, Mode: fakevendor.TokenFail, Times: 1},
		{RefKey: "a", Mode: fakevendor.AcceptHang, Times: 3},
	} {
		if err := fv.AddRule(r); err != nil {
			t.Errorf("AddRule(%+v) = %v, want nil", r, err)
		}
	}
}

func TestTokenFailRules(t *testing.T) {
	t.Parallel()
	fv, base := newServer(t, fakevendor.Options{})
	if err := fv.AddRule(fakevendor.Rule{Mode: fakevendor.TokenFail, Times: 1}); err != nil {
		t.Fatal(err)
	}
	if err := fv.AddRule(fakevendor.Rule{Call: 3, Mode: fakevendor.TokenFail}); err != nil {
		t.Fatal(err)
	}
	var got []int
	var tok string
	for range 4 {
		s, tk := token(t, base)
		got = append(got, s)
		if tk != "" {
			tok = tk
		}
	}
	if fmt.Sprint(got) != "[500 200 500 200]" {
		t.Fatalf("token statuses = %v, want [500 200 500 200]", got)
	}
	if fv.TokenCalls() != 4 || fv.Fired()[fakevendor.TokenFail] != 2 {
		t.Fatalf("token calls %d fired %v", fv.TokenCalls(), fv.Fired())
	}
	// Token-fail rules never touch sends, even send call 3.
	for _, k := range []string{"a", "b", "c"} {
		if s := mustStatus(t, base, tok, k); s != http.StatusOK {
			t.Fatalf("send %s: %d, want 200", k, s)
		}
	}
}

func TestAuthentication(t *testing.T) {
	t.Parallel()
	fv, base := newServer(t, fakevendor.Options{})
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/token", nil)
	req.SetBasicAuth(account, "wrong")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("token with a wrong password: %d, want 401", resp.StatusCode)
	}
	if s := mustStatus(t, base, "not-a-token", "a"); s != http.StatusUnauthorized {
		t.Fatalf("send with a bad token: %d, want 401", s)
	}
	if fv.Count("a") != 0 || fv.Calls() != 1 || len(fv.Fired()) != 0 {
		t.Fatalf("count %d calls %d fired %v: a 401 is counted as a call but not recorded or fired", fv.Count("a"), fv.Calls(), fv.Fired())
	}
}

func TestBadSendBodyIsRefused(t *testing.T) {
	t.Parallel()
	fv, base := newServer(t, fakevendor.Options{})
	tok := mustToken(t, base)
	req, _ := http.NewRequest(http.MethodPost, base+"/v3/message", strings.NewReader(`{"account":"acct","type":"at"}`))
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || len(fv.Ledger()) != 0 {
		t.Fatalf("send without refkey: %d, ledger %d; want 400 and nothing recorded", resp.StatusCode, len(fv.Ledger()))
	}
}

func TestStatusModesRecordOnlyWhenAccepting(t *testing.T) {
	t.Parallel()
	cases := []struct {
		mode   fakevendor.Mode
		status int // 0: no answer at all
		record bool
	}{
		{fakevendor.Accept5xx, http.StatusInternalServerError, true},
		{fakevendor.Fail5xx, http.StatusServiceUnavailable, false},
		{fakevendor.Status401, http.StatusUnauthorized, false},
		{fakevendor.Status403, http.StatusForbidden, false},
		{fakevendor.Status429, http.StatusTooManyRequests, false},
		{fakevendor.Reset, 0, false},
		{fakevendor.AcceptReset, 0, true},
	}
	for _, tc := range cases {
		t.Run(string(tc.mode), func(t *testing.T) {
			t.Parallel()
			fv, base := newServer(t, fakevendor.Options{})
			if err := fv.AddRule(fakevendor.Rule{RefKey: "k", Mode: tc.mode}); err != nil {
				t.Fatal(err)
			}
			tok := mustToken(t, base)
			status, _, err := send(context.Background(), base, tok, "k")
			if tc.status == 0 {
				if err == nil {
					t.Fatalf("got HTTP %d, want the connection closed without an answer", status)
				}
			} else if err != nil || status != tc.status {
				t.Fatalf("got %d %v, want %d", status, err, tc.status)
			}
			want := 0
			if tc.record {
				want = 1
			}
			if n := fv.Count("k"); n != want {
				t.Fatalf("count = %d, want %d", n, want)
			}
			if fv.Fired()[tc.mode] != 1 || fv.Calls() != 1 {
				t.Fatalf("fired %v calls %d, want %s once in one call", fv.Fired(), fv.Calls(), tc.mode)
			}
		})
	}
}

func TestAcceptHangAnswersAfterHangTimeout(t *testing.T) {
	t.Parallel()
	fv, base := newServer(t, fakevendor.Options{HangTimeout: 50 * time.Millisecond})
	if err := fv.AddRule(fakevendor.Rule{RefKey: "k", Mode: fakevendor.AcceptHang}); err != nil {
		t.Fatal(err)
	}
	tok := mustToken(t, base)
	start := time.Now()
	status, a, err := send(context.Background(), base, tok, "k")
	if err != nil || status != http.StatusOK || a.Code != "1000" {
		t.Fatalf("patient client: %d %+v %v, want 200 code 1000", status, a, err)
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Fatalf("answered after %v, before the hang timeout", d)
	}
	if fv.Count("k") != 1 {
		t.Fatalf("count = %d, want 1", fv.Count("k"))
	}
}

// A hang must end as soon as the client gives up, not after HangTimeout.
func TestHangEndsWhenClientGivesUp(t *testing.T) {
	t.Parallel()
	fv := fakevendor.New(fakevendor.Options{Account: account, Password: password, HangTimeout: time.Minute})
	done := make(chan struct{}, 1)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fv.Handler().ServeHTTP(w, r)
		if r.URL.Path == "/v3/message" {
			done <- struct{}{}
		}
	}))
	t.Cleanup(ts.Close)
	t.Cleanup(func() { _ = fv.Close() })
	if err := fv.AddRule(fakevendor.Rule{RefKey: "k", Mode: fakevendor.AcceptHang}); err != nil {
		t.Fatal(err)
	}
	tok := mustToken(t, ts.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, _, err := send(ctx, ts.URL, tok, "k"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("send err = %v, want deadline exceeded", err)
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("handler still hanging 5s after the client gave up")
	}
	if fv.Count("k") != 1 {
		t.Fatalf("count = %d, want 1: accept-hang records even though the client gave up", fv.Count("k"))
	}
}

// Close must release hung requests well before HangTimeout.
func TestCloseReleasesHungRequests(t *testing.T) {
	t.Parallel()
	fv := fakevendor.New(fakevendor.Options{Account: account, Password: password, HangTimeout: time.Minute})
	base, err := fv.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fv.Close() })
	if err := fv.SetDefault(fakevendor.Hang); err != nil {
		t.Fatal(err)
	}
	tok := mustToken(t, base)
	errc := make(chan error, 1)
	go func() {
		_, _, err := send(context.Background(), base, tok, "k")
		errc <- err
	}()
	waitFor(t, "the send to arrive", func() bool { return fv.Calls() == 1 })
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
	waitFor(t, "the send to arrive", func() bool { return fv.Calls() == 1 })
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

func TestLatencyDelaysAcceptedSends(t *testing.T) {
	t.Parallel()
	fv, base := newServer(t, fakevendor.Options{Latency: 80 * time.Millisecond})
	tok := mustToken(t, base)
	start := time.Now()
	if s := mustStatus(t, base, tok, "k"); s != http.StatusOK {
		t.Fatalf("status %d", s)
	}
	if d := time.Since(start); d < 80*time.Millisecond {
		t.Fatalf("accepted after %v, want at least the 80ms latency", d)
	}
	if fv.Count("k") != 1 {
		t.Fatal("not recorded")
	}
}

func TestReportEndpoint(t *testing.T) {
	t.Parallel()
	_, base := newServer(t, fakevendor.Options{})
	tok := mustToken(t, base)
	_, first, _ := send(context.Background(), base, tok, "k")
	mustStatus(t, base, tok, "k")
	report := func(refkey, tok string) (int, map[string]any) {
		req, _ := http.NewRequest(http.MethodGet, base+"/v3/report?refkey="+refkey, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&m)
		return resp.StatusCode, m
	}
	s, m := report("k", tok)
	if s != http.StatusOK || m["found"] != true || m["status"] != "SENT" || m["count"] != float64(2) || m["messagekey"] != first.MessageKey || m["refkey"] != "k" {
		t.Fatalf("report k = %d %v", s, m)
	}
	s, m = report("nope", tok)
	if s != http.StatusOK || m["found"] != false || m["count"] != float64(0) {
		t.Fatalf("report nope = %d %v", s, m)
	}
	if s, _ := report("k", "bad"); s != http.StatusUnauthorized {
		t.Fatalf("report with bad token = %d, want 401", s)
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

func TestAdminClientRoundTrip(t *testing.T) {
	t.Parallel()
	fv := fakevendor.New(fakevendor.Options{Account: account, Password: password, HangTimeout: time.Second})
	base, err := fv.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fv.Close() })
	ctx := context.Background()
	ac := fakevendor.NewAdminClient(base + "/")

	if err := ac.AddRule(ctx, fakevendor.Rule{RefKey: "b", Mode: fakevendor.Fail5xx, Times: 1}); err != nil {
		t.Fatal(err)
	}
	if err := ac.SetDefault(ctx, fakevendor.Status429); err != nil {
		t.Fatal(err)
	}
	tok := mustToken(t, base)
	if s := mustStatus(t, base, tok, "b"); s != http.StatusServiceUnavailable {
		t.Fatalf("rule via admin: %d, want 503", s)
	}
	if s := mustStatus(t, base, tok, "c"); s != http.StatusTooManyRequests {
		t.Fatalf("default via admin: %d, want 429", s)
	}
	if err := ac.ResetRules(ctx); err != nil {
		t.Fatal(err)
	}
	mustStatus(t, base, tok, "a")
	mustStatus(t, base, tok, "a")

	led, err := ac.Ledger(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(led) != 2 || led[0].RefKey != "a" || led[1].Seq != 2 || led[1].Call != 4 || led[0].ContentHash != fakevendor.Hash("hello a") {
		t.Fatalf("ledger = %+v", led)
	}
	if n, err := ac.Count(ctx, "a"); err != nil || n != 2 {
		t.Fatalf("count a = %d %v, want 2", n, err)
	}
	if n, err := ac.Count(ctx, "b"); err != nil || n != 0 {
		t.Fatalf("count b = %d %v, want 0", n, err)
	}
	f, err := ac.Fired(ctx)
	if err != nil || f[fakevendor.Fail5xx] != 1 || f[fakevendor.Status429] != 1 || len(f) != 2 {
		t.Fatalf("fired = %v %v", f, err)
	}
	calls, err := ac.Calls(ctx)
	if err != nil || len(calls) != 4 || calls[0].Mode != fakevendor.Fail5xx || !calls[3].Accepted {
		t.Fatalf("calls = %+v %v", calls, err)
	}

	// Bad rules: the admin client reports the server's 400 message.
	err = ac.AddRule(ctx, fakevendor.Rule{RefKey: "x", Mode: "explode"})
	if err == nil || !strings.Contains(err.Error(), "HTTP 400") || !strings.Contains(err.Error(), `unknown mode "explode"`) {
		t.Fatalf("bad mode: err = %v, want HTTP 400 unknown mode", err)
	}
	if err := ac.SetDefault(ctx, "explode"); err == nil || !strings.Contains(err.Error(), "HTTP 400") {
		t.Fatalf("bad default: err = %v, want HTTP 400", err)
	}
	for _, body := range []string{
		`{"mode":"5xx"}`,               // neither refkey nor call
		`{"refkey":"x","mode":"nope"}`, // unknown mode
		`{"refkey":"x","mdoe":"5xx"}`,  // misspelt field
		`not json`,
	} {
		resp, err := hc.Post(base+"/admin/rules", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var eb struct {
			Error string `json:"error"`
		}
		if resp.StatusCode != http.StatusBadRequest || json.Unmarshal(raw, &eb) != nil || eb.Error == "" {
			t.Errorf("POST /admin/rules %s = %d %s, want 400 with a JSON error", body, resp.StatusCode, raw)
		}
	}
	if s := mustStatus(t, base, tok, "x"); s != http.StatusOK {
		t.Fatalf("after rejected rules: %d, want 200 (nothing was installed)", s)
	}
}

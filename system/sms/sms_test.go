package sms_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/outboxchaos/outboxchaos/fakevendor"
	"github.com/outboxchaos/outboxchaos/system/sms"
	"github.com/outboxchaos/outboxchaos/system/testenv"
)

const (
	account  = "acct"
	password = "pw"
	// patience is the client timeout of the calls a vendor answers: no
	// loaded machine comes near it, so it only ends a hang.
	patience = 30 * time.Second
	// timeout is the client timeout of the sends a vendor never answers,
	// where the timeout is the outcome: well above what a call to the
	// local vendor takes under load (the request must have arrived before
	// it ends), well below the vendor's own HangTimeout.
	timeout = 2 * time.Second
)

type env struct {
	fv     *fakevendor.Server
	url    string
	client *sms.Client // patient
	hasty  *sms.Client // times out after timeout
}

// newEnv runs a fake vendor (hangs capped at a minute, released when the
// test ends) and two clients against it: a patient one and one with the
// short timeout.
func newEnv(t *testing.T) env {
	t.Helper()
	fv := fakevendor.New(fakevendor.Options{Account: account, Password: password, HangTimeout: time.Minute})
	ts := httptest.NewServer(fv.Handler())
	t.Cleanup(ts.Close)
	t.Cleanup(func() { _ = fv.Close() }) // runs first: releases hung handlers
	return env{fv: fv, url: ts.URL, client: sms.New(ts.URL, account, password, patience), hasty: sms.New(ts.URL, account, password, timeout)}
}

func request(refkey string) sms.Request {
	return sms.Request{
		RefKey: refkey, Phone: "01012345678", From: "0212345678",
		TemplateCode: "GRADE_RENEWAL_V1", Text: "홍길동님, 등급이 GOLD(으)로 갱신되었습니다.", Fallback: "[알림] 홍길동님 등급 GOLD 갱신",
	}
}

func addRule(t *testing.T, fv *fakevendor.Server, r fakevendor.Rule) {
	t.Helper()
	if err := fv.AddRule(r); err != nil {
		t.Fatal(err)
	}
}

func TestOutcomeString(t *testing.T) {
	t.Parallel()
	for o, want := range map[sms.Outcome]string{sms.Sent: "SENT", sms.NotSent: "NOT_SENT", sms.Unknown: "UNKNOWN"} {
		if got := o.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", int(o), got, want)
		}
	}
}

// Every fault mode of the fake vendor maps to the outcome class of design §5,
// the ledger shows whether the message really reached the phone, and the
// client made exactly one send call (no automatic retry).
func TestModeToOutcome(t *testing.T) {
	t.Parallel()
	cases := []struct {
		mode    fakevendor.Mode
		outcome sms.Outcome
		status  int
		code    string
		ledger  int
	}{
		{fakevendor.Accept, sms.Sent, 200, "1000", 1},
		{fakevendor.AcceptHang, sms.Unknown, 0, sms.CodeTimeout, 1},
		{fakevendor.Hang, sms.Unknown, 0, sms.CodeTimeout, 0},
		{fakevendor.Undelivered, sms.Unknown, 0, sms.CodeTimeout, 0},
		{fakevendor.Accept5xx, sms.Unknown, 500, "HTTP_500", 1},
		{fakevendor.Fail5xx, sms.Unknown, 503, "HTTP_503", 0},
		{fakevendor.Status401, sms.NotSent, 401, "HTTP_401", 0},
		{fakevendor.Status403, sms.NotSent, 403, "HTTP_403", 0},
		{fakevendor.Status429, sms.NotSent, 429, "HTTP_429", 0},
		{fakevendor.Reset, sms.Unknown, 0, sms.CodeConnReset, 0},
		{fakevendor.AcceptReset, sms.Unknown, 0, sms.CodeConnReset, 1},
	}
	for _, tc := range cases {
		t.Run(string(tc.mode), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			addRule(t, e.fv, fakevendor.Rule{RefKey: "m-1", Mode: tc.mode})
			c := e.client
			if tc.code == sms.CodeTimeout {
				c = e.hasty
			}
			res := c.Send(context.Background(), request("m-1"))
			if res.Outcome != tc.outcome || res.Status != tc.status || res.Code != tc.code {
				t.Fatalf("Send = %+v (%v), want outcome %v status %d code %q", res, res.Outcome, tc.outcome, tc.status, tc.code)
			}
			if (res.Err == nil) != (tc.outcome == sms.Sent) {
				t.Fatalf("Err = %v: want nil exactly when Sent", res.Err)
			}
			if tc.outcome == sms.Sent && res.MessageKey == "" {
				t.Fatal("Sent without a message key")
			}
			if n := e.fv.Count("m-1"); n != tc.ledger {
				t.Fatalf("ledger count = %d, want %d", n, tc.ledger)
			}
			if n := e.fv.Calls(); n != 1 {
				t.Fatalf("send calls = %d, want 1: the client must never retry", n)
			}
			if tc.mode != fakevendor.Accept && e.fv.Fired()[tc.mode] != 1 {
				t.Fatalf("fired = %v: the %s fault did not fire", e.fv.Fired(), tc.mode)
			}
		})
	}
}

func TestSendsTheProtocolBody(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	res := e.client.Send(context.Background(), request("m-1"))
	if res.Outcome != sms.Sent {
		t.Fatalf("Send = %+v", res)
	}
	led := e.fv.Ledger()
	want := request("m-1")
	if len(led) != 1 || led[0].RefKey != "m-1" || led[0].Phone != want.Phone || led[0].Text != want.Text ||
		led[0].ContentHash != fakevendor.Hash(want.Text) {
		t.Fatalf("ledger = %+v", led)
	}
}

// The exact wire format, checked against a stub rather than the fake vendor.
func TestWireFormat(t *testing.T) {
	t.Parallel()
	var (
		mu   sync.Mutex
		body map[string]any
		auth string
	)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/token":
			if u, p, ok := r.BasicAuth(); !ok || u != account || p != password {
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			_, _ = io.WriteString(w, `{"accesstoken":"tok-1","type":"Bearer","expired":"`+time.Now().Add(time.Hour).In(time.FixedZone("KST", 9*3600)).Format("20060102150405")+`"}`)
		case "/v3/message":
			mu.Lock()
			auth = r.Header.Get("Authorization")
			_ = json.NewDecoder(r.Body).Decode(&body)
			mu.Unlock()
			_, _ = io.WriteString(w, `{"code":"1000","description":"success","refkey":"m-1","messagekey":"MK1"}`)
		}
	}))
	t.Cleanup(ts.Close)
	c := sms.New(ts.URL, account, password, patience)
	res := c.Send(context.Background(), request("m-1"))
	if res.Outcome != sms.Sent || res.MessageKey != "MK1" || res.Code != "1000" || res.Status != 200 {
		t.Fatalf("Send = %+v", res)
	}
	mu.Lock()
	defer mu.Unlock()
	if auth != "Bearer tok-1" {
		t.Fatalf("Authorization = %q", auth)
	}
	got, _ := json.Marshal(body)
	const want = `{"account":"acct","content":{"at":{"message":"홍길동님, 등급이 GOLD(으)로 갱신되었습니다.","senderkey":"outboxchaos","templatecode":"GRADE_RENEWAL_V1"}},"from":"0212345678","refkey":"m-1","resend":{"first":"sms"},"resendcontent":{"sms":{"message":"[알림] 홍길동님 등급 GOLD 갱신"}},"to":"01012345678","type":"at"}`
	if string(got) != want {
		t.Fatalf("body =\n%s\nwant\n%s", got, want)
	}
}

// stub serves a valid token and answers every send with status and body.
func stub(t *testing.T, status int, body string) string {
	t.Helper()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/token" {
			_, _ = io.WriteString(w, `{"accesstoken":"t","type":"Bearer","expired":"29991231235959"}`)
			return
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(ts.Close)
	return ts.URL
}

func TestIndefiniteAnswersAreUnknown(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		status int
		body   string
		code   string
	}{
		{"200 with another code", 200, `{"code":"3010","description":"duplicated"}`, "3010"},
		{"200 with a bad body", 200, `<html>oops`, sms.CodeBadBody},
		{"200 for another refkey", 200, `{"code":"1000","refkey":"other","messagekey":"x"}`, sms.CodeBadBody},
		{"400", 400, `{"code":"2000"}`, "HTTP_400"},
		{"302", 302, ``, "HTTP_302"},
		{"502", 502, ``, "HTTP_502"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := sms.New(stub(t, tc.status, tc.body), account, password, patience)
			res := c.Send(context.Background(), request("m-1"))
			if res.Outcome != sms.Unknown || res.Code != tc.code || res.Status != tc.status || res.Err == nil {
				t.Fatalf("Send = %+v, want Unknown %s with status %d and an error", res, tc.code, tc.status)
			}
		})
	}
}

func TestTokenFailureIsNotSent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	addRule(t, e.fv, fakevendor.Rule{Mode: fakevendor.TokenFail, Times: 1})
	res := e.client.Send(context.Background(), request("m-1"))
	if res.Outcome != sms.NotSent || res.Code != sms.CodeTokenFailed || res.Err == nil {
		t.Fatalf("Send = %+v, want NotSent TOKEN_FAILED", res)
	}
	if e.fv.Calls() != 0 || e.fv.Fired()[fakevendor.TokenFail] != 1 {
		t.Fatalf("send calls %d fired %v: no send may follow a token failure", e.fv.Calls(), e.fv.Fired())
	}
	// The failure was not cached: the next Send fetches a token and goes out.
	if res := e.client.Send(context.Background(), request("m-1")); res.Outcome != sms.Sent {
		t.Fatalf("second Send = %+v, want Sent", res)
	}
	if e.fv.TokenCalls() != 2 || e.fv.Count("m-1") != 1 {
		t.Fatalf("token calls %d count %d, want 2 and 1", e.fv.TokenCalls(), e.fv.Count("m-1"))
	}
}

func TestWrongPasswordIsTokenFailed(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := sms.New(e.url, account, "wrong", patience)
	if res := c.Send(context.Background(), request("m-1")); res.Outcome != sms.NotSent || res.Code != sms.CodeTokenFailed {
		t.Fatalf("Send = %+v, want NotSent TOKEN_FAILED", res)
	}
}

func TestTokenIsCached(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, k := range []string{"a", "b"} {
		if res := e.client.Send(context.Background(), request(k)); res.Outcome != sms.Sent {
			t.Fatalf("Send %s = %+v", k, res)
		}
	}
	if n := e.fv.TokenCalls(); n != 1 {
		t.Fatalf("token calls = %d for 2 sends, want 1", n)
	}
}

func TestConcurrentSendsShareOneToken(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const n = 20
	results := make(chan sms.Result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { results <- e.client.Send(context.Background(), request(string(rune('a'+i)))) })
	}
	wg.Wait()
	close(results)
	for res := range results {
		if res.Outcome != sms.Sent {
			t.Fatalf("Send = %+v", res)
		}
	}
	if e.fv.TokenCalls() != 1 || len(e.fv.Ledger()) != n {
		t.Fatalf("token calls %d ledger %d, want 1 and %d", e.fv.TokenCalls(), len(e.fv.Ledger()), n)
	}
}

func TestTokenDroppedAfter401Only(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	addRule(t, e.fv, fakevendor.Rule{Call: 1, Mode: fakevendor.Status403})
	addRule(t, e.fv, fakevendor.Rule{Call: 2, Mode: fakevendor.Status401})
	want := []struct {
		outcome sms.Outcome
		tokens  int
	}{
		{sms.NotSent, 1}, // 403: token kept
		{sms.NotSent, 1}, // 401: token dropped after this call
		{sms.Sent, 2},    // a new token was fetched
		{sms.Sent, 2},
	}
	for i, w := range want {
		res := e.client.Send(context.Background(), request("m-1"))
		if res.Outcome != w.outcome || e.fv.TokenCalls() != w.tokens {
			t.Fatalf("send %d = %+v with %d token calls, want %v with %d", i+1, res, e.fv.TokenCalls(), w.outcome, w.tokens)
		}
	}
}

// A real 401 for an invalid token (not a programmed fault) also drops it.
func TestServerRejectedTokenIsReplaced(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// Route the client to a second fake vendor mid-way, as if the vendor had
	// restarted and forgotten every token it issued.
	fv2 := fakevendor.New(fakevendor.Options{Account: account, Password: password})
	var mu sync.Mutex
	target := e.fv.Handler()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		h := target
		mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	c := sms.New(ts.URL, account, password, patience)
	if res := c.Send(context.Background(), request("b")); res.Outcome != sms.Sent {
		t.Fatalf("Send = %+v", res)
	}
	mu.Lock()
	target = fv2.Handler() // the vendor "restarted": old tokens are void
	mu.Unlock()
	if res := c.Send(context.Background(), request("c")); res.Outcome != sms.NotSent || res.Code != "HTTP_401" {
		t.Fatalf("Send with a void token = %+v, want NotSent HTTP_401", res)
	}
	if res := c.Send(context.Background(), request("c")); res.Outcome != sms.Sent {
		t.Fatalf("Send after the 401 = %+v, want Sent with a fresh token", res)
	}
	if fv2.Count("c") != 1 || fv2.TokenCalls() != 1 {
		t.Fatalf("count %d token calls %d, want 1 and 1", fv2.Count("c"), fv2.TokenCalls())
	}
}

// refusedURL returns a base URL on which nothing listens: a socket bound
// to a kernel-chosen port without listening holds the port for the test,
// so no other test's listener or outgoing connection can be given it.
func refusedURL(t *testing.T) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return "http://127.0.0.1:" + strconv.Itoa(sa.(*syscall.SockaddrInet4).Port)
}

func TestClosedPortBeforeTokenIsTokenFailed(t *testing.T) {
	t.Parallel()
	c := sms.New(refusedURL(t), account, password, patience)
	if res := c.Send(context.Background(), request("m-1")); res.Outcome != sms.NotSent || res.Code != sms.CodeTokenFailed {
		t.Fatalf("Send = %+v, want NotSent TOKEN_FAILED", res)
	}
}

func TestClosedPortOnSendIsConnRefused(t *testing.T) {
	t.Parallel()
	fv := fakevendor.New(fakevendor.Options{Account: account, Password: password})
	base, err := fv.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fv.Close() })
	c := sms.New(base, account, password, patience)
	if res := c.Send(context.Background(), request("a")); res.Outcome != sms.Sent {
		t.Fatalf("Send = %+v", res) // caches the token
	}
	if err := fv.Close(); err != nil {
		t.Fatal(err)
	}
	res := c.Send(context.Background(), request("b"))
	if res.Outcome != sms.NotSent || res.Code != sms.CodeConnRefused || res.Status != 0 || res.Err == nil {
		t.Fatalf("Send to a closed port = %+v, want NotSent CONN_REFUSED", res)
	}
	if fv.Calls() != 1 {
		t.Fatalf("send calls = %d, want 1", fv.Calls())
	}
}

func TestCancelledBeforeSendIsNotSent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res := e.client.Send(ctx, request("m-1"))
	if res.Outcome != sms.NotSent || res.Code != sms.CodeCancelled || !errors.Is(res.Err, context.Canceled) {
		t.Fatalf("Send = %+v, want NotSent CANCELLED wrapping context.Canceled", res)
	}
	if e.fv.TokenCalls() != 0 || e.fv.Calls() != 0 {
		t.Fatalf("token calls %d send calls %d, want none", e.fv.TokenCalls(), e.fv.Calls())
	}
}

// Cancelling while the request is in flight must never give NotSent: the
// vendor may already have sent it (here it has).
func TestCancelledInFlightIsUnknown(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := sms.New(e.url, account, password, patience)
	addRule(t, e.fv, fakevendor.Rule{RefKey: "m-1", Mode: fakevendor.AcceptHang})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan sms.Result, 1)
	go func() { done <- c.Send(ctx, request("m-1")) }()
	testenv.Eventually(t, 5*time.Second, "the send reaching the vendor", func() bool { return e.fv.Count("m-1") > 0 })
	cancel()
	select {
	case res := <-done:
		if res.Outcome != sms.Unknown || res.Code != sms.CodeCancelledInFlight {
			t.Fatalf("Send = %+v, want Unknown CANCELLED_IN_FLIGHT", res)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Send did not return after cancel")
	}
}

// deadlineOnCue is a context whose deadline passes when pass is called:
// from then on it is done with context.DeadlineExceeded, as a context
// from context.WithDeadline is once its time comes.
type deadlineOnCue struct {
	context.Context // Background: no values, no parent to end it
	done            chan struct{}
	once            sync.Once
}

func newDeadlineOnCue() *deadlineOnCue {
	return &deadlineOnCue{Context: context.Background(), done: make(chan struct{})}
}

func (c *deadlineOnCue) pass()                 { c.once.Do(func() { close(c.done) }) }
func (c *deadlineOnCue) Done() <-chan struct{} { return c.done }

func (c *deadlineOnCue) Err() error {
	select {
	case <-c.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

// A caller's deadline that ends while the request is in flight is a timeout.
// The deadline passes once the vendor holds the request: a real one set
// before the call could pass before the request left.
func TestContextDeadlineInFlightIsUnknown(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := sms.New(e.url, account, password, patience)
	addRule(t, e.fv, fakevendor.Rule{RefKey: "m-1", Mode: fakevendor.Hang})
	if res := c.Send(context.Background(), request("warm")); res.Outcome != sms.Sent {
		t.Fatalf("Send = %+v", res) // fetch the token outside the deadline
	}
	ctx := newDeadlineOnCue()
	defer ctx.pass()
	done := make(chan sms.Result, 1)
	go func() { done <- c.Send(ctx, request("m-1")) }()
	testenv.Eventually(t, 5*time.Second, "the vendor holding the send", func() bool {
		for _, call := range e.fv.CallLog() {
			if call.RefKey == "m-1" {
				return true
			}
		}
		return false
	})
	ctx.pass()
	select {
	case res := <-done:
		if res.Outcome != sms.Unknown || res.Code != sms.CodeTimeout {
			t.Fatalf("Send = %+v, want Unknown TIMEOUT", res)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Send did not return after its deadline passed")
	}
}

func TestLookup(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	sent := e.client.Send(ctx, request("ok"))
	if sent.Outcome != sms.Sent {
		t.Fatalf("Send = %+v", sent)
	}
	addRule(t, e.fv, fakevendor.Rule{RefKey: "hung", Mode: fakevendor.AcceptHang})
	if res := e.hasty.Send(ctx, request("hung")); res.Outcome != sms.Unknown {
		t.Fatalf("Send = %+v, want Unknown", res)
	}

	rep, err := e.client.Lookup(ctx, "ok")
	if err != nil || rep != (sms.Report{RefKey: "ok", Found: true, Status: "SENT", MessageKey: sent.MessageKey, Count: 1}) {
		t.Fatalf("Lookup(ok) = %+v %v", rep, err)
	}
	// The reconciliation case: the client saw Unknown, the vendor sent it.
	rep, err = e.client.Lookup(ctx, "hung")
	if err != nil || !rep.Found || rep.Status != "SENT" || rep.Count != 1 {
		t.Fatalf("Lookup(hung) = %+v %v, want found SENT once", rep, err)
	}
	rep, err = e.client.Lookup(ctx, "never")
	if err != nil || rep.Found || rep.Count != 0 || rep.RefKey != "never" {
		t.Fatalf("Lookup(never) = %+v %v, want not found", rep, err)
	}
	if _, err := sms.New(refusedURL(t), account, password, patience).Lookup(ctx, "ok"); err == nil {
		t.Fatal("Lookup against a closed port = nil error")
	}
}

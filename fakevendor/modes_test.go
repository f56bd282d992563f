package fakevendor_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/outboxchaos/outboxchaos/fakevendor"
	"github.com/outboxchaos/outboxchaos/system/testenv"
)

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

// An accept-hold send is recorded at once and answered only when the rules
// are reset, however long that takes: no timer of the vendor's ends it.
func TestAcceptHoldAnswersWhenRulesReset(t *testing.T) {
	t.Parallel()
	fv, base := newServer(t, fakevendor.Options{HangTimeout: time.Millisecond})
	if err := fv.AddRule(fakevendor.Rule{RefKey: "k", Mode: fakevendor.AcceptHold}); err != nil {
		t.Fatal(err)
	}
	tok := mustToken(t, base)
	type answer struct {
		status int
		code   string
		err    error
	}
	got := make(chan answer, 1)
	go func() {
		status, a, err := send(context.Background(), base, tok, "k")
		got <- answer{status, a.Code, err}
	}()
	for fv.Count("k") == 0 {
		time.Sleep(time.Millisecond)
	}
	// Far past HangTimeout: still held.
	select {
	case a := <-got:
		t.Fatalf("answered before the reset: %+v", a)
	case <-time.After(100 * time.Millisecond):
	}
	fv.ResetRules()
	a := <-got
	if a.err != nil || a.status != http.StatusInternalServerError {
		t.Fatalf("after the reset: %d %s %v, want 500", a.status, a.code, a.err)
	}
	if fv.Count("k") != 1 || fv.Fired()[fakevendor.AcceptHold] != 1 {
		t.Fatalf("count %d fired %v, want recorded once", fv.Count("k"), fv.Fired())
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
	// The client gives up once the vendor has recorded its request: a
	// deadline instead could end before the request arrived.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, _, err := send(ctx, ts.URL, tok, "k")
		errc <- err
	}()
	testenv.Eventually(t, 5*time.Second, "the send to be recorded", func() bool { return fv.Count("k") == 1 })
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("send err = %v, want the client's cancel", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("send still waiting 5s after the client gave up")
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

// A hold send is never recorded and answered (504) only when the rules are
// reset, however long that takes; the call log shows it from its arrival,
// so a harness can wait for it to be held.
func TestHoldAnswersWhenRulesResetWithoutRecording(t *testing.T) {
	t.Parallel()
	fv, base := newServer(t, fakevendor.Options{HangTimeout: time.Millisecond})
	if err := fv.AddRule(fakevendor.Rule{RefKey: "k", Mode: fakevendor.Hold, Times: 1}); err != nil {
		t.Fatal(err)
	}
	tok := mustToken(t, base)
	type answer struct {
		status int
		code   string
		err    error
	}
	got := make(chan answer, 1)
	go func() {
		status, a, err := send(context.Background(), base, tok, "k")
		got <- answer{status, a.Code, err}
	}()
	for len(fv.CallLog()) == 0 {
		time.Sleep(time.Millisecond)
	}
	if c := fv.CallLog()[0]; c.RefKey != "k" || c.Mode != fakevendor.Hold || c.Accepted {
		t.Fatalf("call log = %+v, want k held, not accepted", c)
	}
	// Far past HangTimeout: still held.
	select {
	case a := <-got:
		t.Fatalf("answered before the reset: %+v", a)
	case <-time.After(100 * time.Millisecond):
	}
	fv.ResetRules()
	a := <-got
	if a.err != nil || a.status != http.StatusGatewayTimeout {
		t.Fatalf("after the reset: %d %s %v, want 504", a.status, a.code, a.err)
	}
	if fv.Count("k") != 0 || fv.Fired()[fakevendor.Hold] != 1 {
		t.Fatalf("count %d fired %v, want never recorded, hold fired once", fv.Count("k"), fv.Fired())
	}
	// The rules are gone: the next send of k is accepted.
	if s := mustStatus(t, base, tok, "k"); s != http.StatusOK || fv.Count("k") != 1 {
		t.Fatalf("after the reset a send answered %d, count %d: want 200 and recorded", s, fv.Count("k"))
	}
}

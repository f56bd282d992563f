package fakevendor_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/outboxchaos/outboxchaos/fakevendor"
	"github.com/outboxchaos/outboxchaos/system/sms"
)

// t0 is where a testClock starts.
var t0 = time.Date(2025, 3, 14, 20, 40, 0, 0, time.UTC)

// testClock is a vendor clock the test moves by hand.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *testClock { return &testClock{now: t0} }

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

// patience is how long the sms clients of calls the vendor answers wait:
// no loaded machine comes near it, so it only ends a hang.
const patience = 30 * time.Second

// clientTimeout is how long the sms clients of calls the vendor never
// answers wait, where "the client gives up" is the outcome: well above what
// a call to the local vendor takes under load (the request must have
// arrived before it ends), and far below the servers' HangTimeout (so
// nothing else ends a hang first).
const clientTimeout = 2 * time.Second

// smsClient is a patient client: for the calls the vendor answers.
func smsClient(base string) *sms.Client { return sms.New(base, account, password, patience) }

// hastyClient gives up after clientTimeout: for the calls the vendor holds.
func hastyClient(base string) *sms.Client { return sms.New(base, account, password, clientTimeout) }

func smsRequest(refkey string, expireAt time.Time) sms.Request {
	return sms.Request{RefKey: refkey, Phone: "01000000000", From: "0212345678", TemplateCode: "T1",
		Text: "hello " + refkey, Fallback: "fallback", ExpireAt: expireAt}
}

// sendWith makes one send call whose body has the extra top-level fields;
// err is set when no answer came back.
func sendWith(base, tok, refkey string, extra map[string]any) (int, map[string]any, error) {
	var body map[string]any
	if err := json.Unmarshal(sendBody(refkey, "hello "+refkey), &body); err != nil {
		return 0, nil, err
	}
	for k, v := range extra {
		body[k] = v
	}
	raw, err := json.Marshal(body)
	if err != nil {
		return 0, nil, err
	}
	req, err := http.NewRequest(http.MethodPost, base+"/v3/message", bytes.NewReader(raw))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	var a map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&a)
	return resp.StatusCode, a, nil
}

func expireAt(t time.Time) map[string]any {
	return map[string]any{"expireat": t.Format(time.RFC3339Nano)}
}

func TestExpiredSendIsRefusedAndNeverRecorded(t *testing.T) {
	t.Parallel()
	clk := newClock()
	fv, base := newServer(t, fakevendor.Options{Clock: clk.Now})
	c := smsClient(base)
	ctx := context.Background()

	res := c.Send(ctx, smsRequest("late", t0.Add(-time.Second)))
	if res.Outcome != sms.NotSent || res.Code != sms.CodeExpiredAtVendor || res.Status != http.StatusGone || res.Err == nil {
		t.Fatalf("Send past its expireat = %+v, want NotSent EXPIRED_AT_VENDOR with HTTP 410", res)
	}
	tok := mustToken(t, base)
	status, a, err := sendWith(base, tok, "late", expireAt(t0.Add(-time.Nanosecond)))
	if err != nil || status != http.StatusGone || a["code"] != "4100" || a["description"] != "request expired" {
		t.Fatalf("raw send past its expireat = %d %v %v, want 410 code 4100 \"request expired\"", status, a, err)
	}
	if n := fv.Count("late"); n != 0 {
		t.Fatalf("count(late) = %d, want 0: an expired send never reaches a phone", n)
	}
	for _, c := range fv.CallLog() {
		if !c.Expired || c.Accepted || c.Mode != fakevendor.Accept {
			t.Fatalf("call %+v: want mode accept, expired, not accepted", c)
		}
	}

	// A deadline still ahead, or exactly now, is met.
	for i, exp := range []time.Time{t0.Add(time.Minute), t0} {
		if res := c.Send(ctx, smsRequest("on-time", exp)); res.Outcome != sms.Sent {
			t.Fatalf("Send %d with expireat %v (vendor clock %v) = %+v, want Sent", i, exp, t0, res)
		}
	}
	led := fv.Ledger()
	if len(led) != 2 || led[0].RefKey != "on-time" || !led[0].At.Equal(t0) {
		t.Fatalf("ledger = %+v, want on-time twice, stamped with the vendor's clock", led)
	}
}

// The deadline is checked where the vendor records: every recording mode
// refuses an expired send; the other modes are unchanged.
func TestExpireAtInEveryRecordingMode(t *testing.T) {
	t.Parallel()
	cases := []struct {
		mode   fakevendor.Mode
		status int // 0: the connection closed without an answer
	}{
		{fakevendor.Accept5xx, http.StatusGone},
		{fakevendor.AcceptHang, http.StatusGone}, // the client waits out the hang
		{fakevendor.AcceptReset, 0},
		{fakevendor.Status429, http.StatusTooManyRequests},
	}
	for _, tc := range cases {
		t.Run(string(tc.mode), func(t *testing.T) {
			t.Parallel()
			clk := newClock()
			fv, base := newServer(t, fakevendor.Options{Clock: clk.Now, HangTimeout: 50 * time.Millisecond})
			if err := fv.AddRule(fakevendor.Rule{RefKey: "k", Mode: tc.mode}); err != nil {
				t.Fatal(err)
			}
			tok := mustToken(t, base)
			status, a, err := sendWith(base, tok, "k", expireAt(t0.Add(-time.Second)))
			switch {
			case tc.status == 0 && err == nil:
				t.Fatalf("got HTTP %d, want the connection closed", status)
			case tc.status != 0 && (err != nil || status != tc.status):
				t.Fatalf("got %d %v %v, want %d", status, a, err, tc.status)
			}
			if n := fv.Count("k"); n != 0 {
				t.Fatalf("count = %d, want 0", n)
			}
			if log := fv.CallLog(); len(log) != 1 || log[0].Expired != (tc.mode != fakevendor.Status429) || fv.Fired()[tc.mode] != 1 {
				t.Fatalf("call log %+v fired %v", log, fv.Fired())
			}
		})
	}
}

func TestMalformedExpireAtIsBadRequest(t *testing.T) {
	t.Parallel()
	fv, base := newServer(t, fakevendor.Options{})
	tok := mustToken(t, base)
	for _, v := range []any{"tomorrow", "2025-03-14 20:40:00", 1741984800} {
		if status, a, err := sendWith(base, tok, "k", map[string]any{"expireat": v}); err != nil || status != http.StatusBadRequest || a["code"] != "2000" {
			t.Errorf("expireat %v: %d %v %v, want 400 code 2000", v, status, a, err)
		}
	}
	if fv.Count("k") != 0 || fv.CallLog()[0].Mode != "bad-request" {
		t.Fatalf("count %d calls %+v, want nothing recorded and bad-request calls", fv.Count("k"), fv.CallLog())
	}
}

// The odd answers: a 200 whose body carries a failure code (not recorded),
// a 200 whose body arrives after the client gave up, and a 200 that is not
// JSON (both recorded). The client calls each an unknown outcome, never
// "sent" and never "definitely not sent".
func TestOddAnswersAreUnknownOutcomes(t *testing.T) {
	t.Parallel()
	for mode, want := range map[fakevendor.Mode]struct {
		code     string
		recorded bool
	}{
		fakevendor.FailCode:  {"3005", false},
		fakevendor.LateBody:  {sms.CodeTimeout, true},
		fakevendor.Malformed: {sms.CodeBadBody, true},
	} {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			srv, base := started(t, fakevendor.Options{Account: account, Password: password, HangTimeout: 5 * time.Second})
			if err := srv.SetDefault(mode); err != nil {
				t.Fatal(err)
			}
			c := smsClient(base)
			if want.code == sms.CodeTimeout {
				c = hastyClient(base)
			}
			res := c.Send(context.Background(), smsRequest("m-1", time.Time{}))
			if res.Outcome != sms.Unknown || res.Code != want.code || res.Status != 200 {
				t.Fatalf("Send = %+v, want Unknown %s on HTTP 200", res, want.code)
			}
			if got := srv.Count("m-1") == 1; got != want.recorded {
				t.Fatalf("recorded = %v, want %v", got, want.recorded)
			}
		})
	}
}

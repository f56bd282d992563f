package sms_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/outboxchaos/outboxchaos/fakevendor"
	"github.com/outboxchaos/outboxchaos/system/sms"
)

// bodyStub serves a token and answers every send 200 code 1000, keeping the
// last send body.
func bodyStub(t *testing.T) (string, func() map[string]any) {
	t.Helper()
	var (
		mu   sync.Mutex
		body map[string]any
	)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/token" {
			_, _ = io.WriteString(w, `{"accesstoken":"t","type":"Bearer","expired":"29991231235959"}`)
			return
		}
		mu.Lock()
		body = nil
		_ = json.NewDecoder(r.Body).Decode(&body)
		mu.Unlock()
		_, _ = io.WriteString(w, `{"code":"1000","description":"success","messagekey":"MK"}`)
	}))
	t.Cleanup(ts.Close)
	return ts.URL, func() map[string]any {
		mu.Lock()
		defer mu.Unlock()
		return body
	}
}

func TestExpireAtOnTheWire(t *testing.T) {
	t.Parallel()
	url, last := bodyStub(t)
	c := sms.New(url, account, password, patience)
	req := request("m-1")
	req.ExpireAt = time.Date(2025, 3, 14, 20, 40, 5, 123456789, time.FixedZone("KST", 9*3600))
	if res := c.Send(context.Background(), req); res.Outcome != sms.Sent {
		t.Fatalf("Send = %+v", res)
	}
	if got := last()["expireat"]; got != "2025-03-14T11:40:05.123456789Z" {
		t.Fatalf("expireat = %v, want RFC 3339 with nanoseconds, UTC", got)
	}
	if res := c.Send(context.Background(), request("m-2")); res.Outcome != sms.Sent {
		t.Fatalf("Send = %+v", res)
	}
	if got, ok := last()["expireat"]; ok {
		t.Fatalf("expireat = %v for a zero ExpireAt, want the field omitted", got)
	}
}

func TestExpiredAtVendorIsNotSent(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		status int
		body   string
	}{
		{"410", http.StatusGone, `{"code":"4100","description":"request expired"}`},
		{"410 without a body", http.StatusGone, ``},
		{"200 with code 4100", http.StatusOK, `{"code":"4100","description":"request expired"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := sms.New(stub(t, tc.status, tc.body), account, password, patience)
			res := c.Send(context.Background(), request("m-1"))
			if res.Outcome != sms.NotSent || res.Code != sms.CodeExpiredAtVendor || res.Status != tc.status || res.Err == nil {
				t.Fatalf("Send = %+v, want NotSent %s with status %d and an error", res, sms.CodeExpiredAtVendor, tc.status)
			}
		})
	}
}

// Against the fake vendor, whose clock is fixed: a deadline it has passed
// is refused and never reaches the phone; one ahead is sent.
func TestExpireAtAgainstTheVendorClock(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 3, 14, 20, 40, 0, 0, time.UTC)
	fv := fakevendor.New(fakevendor.Options{Account: account, Password: password, Clock: func() time.Time { return now }})
	ts := httptest.NewServer(fv.Handler())
	t.Cleanup(ts.Close)
	c := sms.New(ts.URL, account, password, patience)
	late := request("late")
	late.ExpireAt = now.Add(-time.Millisecond)
	if res := c.Send(context.Background(), late); res.Outcome != sms.NotSent || res.Code != sms.CodeExpiredAtVendor {
		t.Fatalf("Send past its deadline = %+v, want NotSent EXPIRED_AT_VENDOR", res)
	}
	onTime := request("on-time")
	onTime.ExpireAt = now.Add(time.Millisecond)
	if res := c.Send(context.Background(), onTime); res.Outcome != sms.Sent {
		t.Fatalf("Send before its deadline = %+v, want Sent", res)
	}
	if fv.Count("late") != 0 || fv.Count("on-time") != 1 {
		t.Fatalf("ledger = %+v, want only on-time", fv.Ledger())
	}
	// The reconciler's definitive case: the vendor never received it.
	rep, err := c.Lookup(context.Background(), "late")
	if err != nil || rep.Found {
		t.Fatalf("Lookup(late) = %+v %v, want not found", rep, err)
	}
}

// Lookup answers a report or an error: an answer that is not a report —
// contradictory, malformed, for another refkey, any non-200 — is an error.
func TestLookupAnswers(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		status  int
		body    string
		want    sms.Report
		wantErr string
	}{
		{"failed with a reason", 200, `{"refkey":"m-1","found":true,"status":"FAILED","reason":"3101 undeliverable","count":0}`,
			sms.Report{RefKey: "m-1", Found: true, Status: sms.ReportFailed, Reason: "3101 undeliverable"}, ""},
		{"pending", 200, `{"refkey":"m-1","found":true,"status":"PENDING","count":0}`,
			sms.Report{RefKey: "m-1", Found: true, Status: sms.ReportPending}, ""},
		{"not found", 200, `{"refkey":"m-1","found":false,"count":0}`, sms.Report{RefKey: "m-1"}, ""},
		{"found without a status", 200, `{"refkey":"m-1","found":true,"count":1}`, sms.Report{}, `status ""`},
		{"found with an unknown status", 200, `{"refkey":"m-1","found":true,"status":"DELIVERED","count":1}`, sms.Report{}, `"DELIVERED"`},
		{"not found with a status", 200, `{"refkey":"m-1","found":false,"status":"SENT"}`, sms.Report{}, "not found, yet"},
		{"another refkey", 200, `{"refkey":"m-2","found":true,"status":"SENT","count":1}`, sms.Report{}, `refkey "m-2"`},
		{"malformed", 200, `{"refkey":"m-1","found":tr`, sms.Report{}, "decode"},
		{"503", 503, `{"code":"9999"}`, sms.Report{}, "HTTP 503"},
		{"410", 410, ``, sms.Report{}, "HTTP 410"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := sms.New(stub(t, tc.status, tc.body), account, password, patience)
			rep, err := c.Lookup(context.Background(), "m-1")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Lookup = %+v %v, want an error containing %q", rep, err, tc.wantErr)
				}
				return
			}
			if err != nil || rep != tc.want {
				t.Fatalf("Lookup = %+v %v, want %+v", rep, err, tc.want)
			}
		})
	}
}

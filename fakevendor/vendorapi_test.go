package fakevendor_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/outboxchaos/outboxchaos/fakevendor"
)

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

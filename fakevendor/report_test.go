package fakevendor_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/outboxchaos/outboxchaos/fakevendor"
	"github.com/outboxchaos/outboxchaos/system/sms"
	"github.com/outboxchaos/outboxchaos/system/testenv"
)

// Each report mode's answer, as the sms client reads it; the rule has
// Times 1, so the next lookup gets the truth again.
// timedOut as a case's wantErr asks for a timeout error, however worded.
const timedOut = "<timeout>"

func TestReportModes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		mode    fakevendor.Mode
		refkey  string // "sent" is in the ledger, "never" is not
		want    sms.Report
		wantErr string // the client's error, for modes that give no report
	}{
		{fakevendor.ReportMissing, "sent", sms.Report{RefKey: "sent"}, ""},
		{fakevendor.ReportPending, "sent", sms.Report{RefKey: "sent", Found: true, Status: sms.ReportPending}, ""},
		{fakevendor.ReportWrong, "sent", sms.Report{RefKey: "sent", Found: true, Status: sms.ReportFailed, Reason: "3101 undeliverable"}, ""},
		{fakevendor.ReportWrong, "never", sms.Report{RefKey: "never", Found: true, Status: sms.ReportSent, Count: 1}, ""},
		{fakevendor.LookupHang, "sent", sms.Report{}, timedOut},
		{fakevendor.Lookup5xx, "sent", sms.Report{}, "HTTP 503"},
		{fakevendor.LookupMalformed, "sent", sms.Report{}, "decode answer"},
	}
	for _, tc := range cases {
		t.Run(string(tc.mode)+"/"+tc.refkey, func(t *testing.T) {
			t.Parallel()
			fv, base := newServer(t, fakevendor.Options{HangTimeout: time.Minute})
			c := smsClient(base)
			if res := c.Send(context.Background(), smsRequest("sent", time.Time{})); res.Outcome != sms.Sent {
				t.Fatalf("Send = %+v", res)
			}
			if err := fv.AddRule(fakevendor.Rule{RefKey: tc.refkey, Mode: tc.mode, Times: 1}); err != nil {
				t.Fatal(err)
			}
			lc := c
			if tc.wantErr == timedOut {
				lc = hastyClient(base)
			}
			rep, err := lc.Lookup(context.Background(), tc.refkey)
			if tc.wantErr == timedOut {
				// The client's own timeout: net/http words it "Client.Timeout
				// exceeded" or "context deadline exceeded" depending on which
				// of its timers notices first (a wrapped transport, such as the
				// crash points', makes either possible); both are a timeout.
				var te interface{ Timeout() bool }
				if err == nil || !(errors.Is(err, context.DeadlineExceeded) || errors.As(err, &te) && te.Timeout()) {
					t.Fatalf("Lookup = %+v %v, want the client's timeout", rep, err)
				}
			} else if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Lookup = %+v %v, want an error containing %q", rep, err, tc.wantErr)
				}
			} else {
				rep.MessageKey = "" // report-wrong makes one up
				if err != nil || rep != tc.want {
					t.Fatalf("Lookup = %+v %v, want %+v", rep, err, tc.want)
				}
			}
			lk := fv.Lookups()
			if len(lk) != 1 || lk[0].Mode != tc.mode || lk[0].Found != tc.want.Found || lk[0].Status != tc.want.Status || fv.Fired()[tc.mode] != 1 {
				t.Fatalf("lookups %+v fired %v, want one %s logged with what it said, fired once", lk, fv.Fired(), tc.mode)
			}
			// Times 1: the next lookup is truthful.
			truth := mustLookup(t, c, tc.refkey)
			if truth.Found != (tc.refkey == "sent") {
				t.Fatalf("next Lookup = %+v, want the truth", truth)
			}
			if fv.Count("sent") != 1 || fv.Calls() != 1 {
				t.Fatalf("count %d calls %d: a report mode must not touch sends", fv.Count("sent"), fv.Calls())
			}
		})
	}
}

// A lookup-hang ends as soon as the client gives up, not after HangTimeout.
func TestLookupHangEndsWhenClientGivesUp(t *testing.T) {
	t.Parallel()
	fv := fakevendor.New(fakevendor.Options{Account: account, Password: password, HangTimeout: time.Minute})
	done := make(chan struct{}, 1)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fv.Handler().ServeHTTP(w, r)
		if r.URL.Path == "/v3/report" {
			done <- struct{}{}
		}
	}))
	t.Cleanup(ts.Close)
	t.Cleanup(func() { _ = fv.Close() })
	if err := fv.AddRule(fakevendor.Rule{RefKey: "k", Mode: fakevendor.LookupHang}); err != nil {
		t.Fatal(err)
	}
	// The client gives up once the vendor has logged its lookup: a timeout
	// instead could end before the lookup arrived.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := smsClient(ts.URL).Lookup(ctx, "k")
		errc <- err
	}()
	testenv.Eventually(t, 5*time.Second, "the lookup to arrive", func() bool { return len(fv.Lookups()) == 1 })
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Lookup = %v, want the client's cancel", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Lookup still waiting 5s after the client gave up")
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("report handler still hanging 5s after the client gave up")
	}
}

// Report rules count report requests, and only those; send rules never
// touch reports.
func TestReportRulesByCallNumber(t *testing.T) {
	t.Parallel()
	fv, base := newServer(t, fakevendor.Options{})
	for _, r := range []fakevendor.Rule{
		{Call: 2, Mode: fakevendor.Lookup5xx},
		{Call: 1, Mode: fakevendor.Fail5xx},
	} {
		if err := fv.AddRule(r); err != nil {
			t.Fatal(err)
		}
	}
	c := smsClient(base)
	ctx := context.Background()
	for _, k := range []string{"a", "b"} { // sends 1 and 2: send 2 must not consume the report rule
		c.Send(ctx, smsRequest(k, time.Time{}))
	}
	var got []string
	for range 3 {
		_, err := c.Lookup(ctx, "b")
		got = append(got, fmt.Sprint(err == nil))
	}
	if fmt.Sprint(got) != "[true false true]" {
		t.Fatalf("lookup successes = %v, want [true false true]: only report request 2 fails", got)
	}
	if f := fv.Fired(); f[fakevendor.Lookup5xx] != 1 || f[fakevendor.Fail5xx] != 1 || len(f) != 2 {
		t.Fatalf("fired = %v, want 5xx and lookup-5xx once each", f)
	}
}

func TestReportModesAreRulesOnly(t *testing.T) {
	t.Parallel()
	fv := fakevendor.New(fakevendor.Options{})
	for _, m := range fakevendor.Modes() {
		if !m.ForReports() {
			continue
		}
		err := fv.SetDefault(m)
		if err == nil || !strings.Contains(err.Error(), "report requests") {
			t.Errorf("SetDefault(%q) = %v, want an error saying it applies to report requests", m, err)
		}
		for _, r := range []fakevendor.Rule{{Mode: m}, {RefKey: "a", Call: 1, Mode: m}} {
			if err := fv.AddRule(r); err == nil {
				t.Errorf("AddRule(%+v) = nil, want error", r)
			}
		}
		for _, r := range []fakevendor.Rule{{RefKey: "a", Mode: m}, {Call: 1, Mode: m, Times: 2}} {
			if err := fv.AddRule(r); err != nil {
				t.Errorf("AddRule(%+v) = %v", r, err)
			}
		}
	}
	for _, m := range []fakevendor.Mode{fakevendor.Undelivered, fakevendor.LandLate} {
		if err := fv.SetDefault(m); err != nil {
			t.Errorf("SetDefault(%q) = %v, want nil: a send mode", m, err)
		}
	}
	if fakevendor.Accept.ForReports() || fakevendor.TokenFail.ForReports() || fakevendor.Mode("bogus").ForReports() {
		t.Error("ForReports is true for a mode that is not a report mode")
	}
}

// Every report request is logged in order with what it was answered, and
// the log reads the same through the admin endpoint.
func TestLookupLogAndAdminRoundTrip(t *testing.T) {
	t.Parallel()
	clk := newClock()
	fv, base := started(t, fakevendor.Options{Clock: clk.Now})
	ctx := context.Background()
	ac := fakevendor.NewAdminClient(base)
	if err := ac.AddRule(ctx, fakevendor.Rule{RefKey: "gone", Mode: fakevendor.ReportMissing}); err != nil {
		t.Fatal(err)
	}
	c := smsClient(base)
	c.Send(ctx, smsRequest("gone", time.Time{}))
	mustLookup(t, c, "gone")
	clk.Set(t0.Add(time.Second))
	mustLookup(t, c, "never")
	tok := mustToken(t, base)
	for _, q := range []struct{ path, tok string }{{"/v3/report?refkey=x", "bad"}, {"/v3/report", tok}} {
		req, _ := http.NewRequest(http.MethodGet, base+q.path, nil)
		req.Header.Set("Authorization", "Bearer "+q.tok)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	want := []fakevendor.Lookup{
		{N: 1, RefKey: "gone", Mode: fakevendor.ReportMissing, At: t0},
		{N: 2, RefKey: "never", Mode: fakevendor.Report, At: t0.Add(time.Second)},
		{N: 3, RefKey: "x", Mode: fakevendor.Status401, At: t0.Add(time.Second)},
		{N: 4, RefKey: "", Mode: "bad-request", At: t0.Add(time.Second)},
	}
	if got := fv.Lookups(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("Lookups =\n%+v\nwant\n%+v", got, want)
	}
	got, err := ac.Lookups(ctx)
	if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("AdminClient.Lookups = %+v %v, want %+v", got, err, want)
	}
	if f, err := ac.Fired(ctx); err != nil || f[fakevendor.ReportMissing] != 1 || len(f) != 1 {
		t.Fatalf("fired = %v %v, want report-missing once (the truthful report is not a fault)", f, err)
	}
	resp, err := hc.Get(base + "/admin/lookups")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var raw []map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&raw); err != nil || len(raw) != 4 {
		t.Fatalf("GET /admin/lookups: %v %v", raw, err)
	}
	for _, k := range []string{"n", "refkey", "mode", "found", "status", "at"} {
		if _, ok := raw[0][k]; !ok {
			t.Errorf("GET /admin/lookups entry %v has no %q", raw[0], k)
		}
	}
}

func TestTruthfulLookupOfAnAcceptedSend(t *testing.T) {
	t.Parallel()
	fv, base := newServer(t, fakevendor.Options{})
	c := smsClient(base)
	sent := c.Send(context.Background(), smsRequest("k", time.Time{}))
	rep := mustLookup(t, c, "k")
	if rep != (sms.Report{RefKey: "k", Found: true, Status: sms.ReportSent, MessageKey: sent.MessageKey, Count: 1}) {
		t.Fatalf("Lookup = %+v, send %+v", rep, sent)
	}
	if lk := fv.Lookups(); len(lk) != 1 || lk[0].Mode != fakevendor.Report || !lk[0].Found || lk[0].Status != "SENT" {
		t.Fatalf("lookups = %+v", lk)
	}
}

// The package doc and docs/harness.md name every mode.
func TestDocsNameEveryMode(t *testing.T) {
	t.Parallel()
	pkg, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	harness, err := os.ReadFile("../docs/harness.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range fakevendor.Modes() {
		if !strings.Contains(string(pkg), "//   - "+string(m)+":") {
			t.Errorf("the package doc (doc.go) has no line \"- %s: ...\"", m)
		}
		if !strings.Contains(string(harness), "`"+string(m)+"`") {
			t.Errorf("docs/harness.md does not name `%s`", m)
		}
	}
}

package fakevendor_test

import (
	"context"
	"testing"
	"time"

	"github.com/outboxchaos/outboxchaos/fakevendor"
	"github.com/outboxchaos/outboxchaos/system/sms"
	"github.com/outboxchaos/outboxchaos/system/testenv"
)

// mustLookup asks for refkey's report and fails the test on an error.
func mustLookup(t *testing.T, c *sms.Client, refkey string) sms.Report {
	t.Helper()
	rep, err := c.Lookup(context.Background(), refkey)
	if err != nil {
		t.Fatalf("Lookup(%s): %v", refkey, err)
	}
	return rep
}

// mustTimeOut sends req through a client that gives up after clientTimeout;
// the send must end Unknown TIMEOUT: the client gave up.
func mustTimeOut(t *testing.T, base string, req sms.Request) {
	t.Helper()
	if res := hastyClient(base).Send(context.Background(), req); res.Outcome != sms.Unknown || res.Code != sms.CodeTimeout {
		t.Fatalf("Send(%s) = %+v, want Unknown TIMEOUT", req.RefKey, res)
	}
}

func TestUndeliveredTimesOutAndReportsFailed(t *testing.T) {
	t.Parallel()
	fv, base := newServer(t, fakevendor.Options{HangTimeout: time.Minute})
	if err := fv.AddRule(fakevendor.Rule{RefKey: "k", Mode: fakevendor.Undelivered, Times: 1}); err != nil {
		t.Fatal(err)
	}
	c := smsClient(base)
	mustTimeOut(t, base, smsRequest("k", time.Time{}))
	if fv.Count("k") != 0 || fv.Fired()[fakevendor.Undelivered] != 1 {
		t.Fatalf("count %d fired %v, want nothing recorded and undelivered once", fv.Count("k"), fv.Fired())
	}
	want := sms.Report{RefKey: "k", Found: true, Status: sms.ReportFailed, Reason: "3101 undeliverable"}
	if rep := mustLookup(t, c, "k"); rep != want {
		t.Fatalf("Lookup(k) = %+v, want %+v", rep, want)
	}
	// A later send of the same refkey that reaches the phone wins: SENT.
	if res := c.Send(context.Background(), smsRequest("k", time.Time{})); res.Outcome != sms.Sent {
		t.Fatalf("second Send = %+v", res)
	}
	if rep := mustLookup(t, c, "k"); rep.Status != sms.ReportSent || rep.Count != 1 || rep.Reason != "" {
		t.Fatalf("Lookup(k) after a delivery = %+v, want SENT once", rep)
	}
}

// The dangerous order: the sender gives up, the lookup says "never
// received", and then the original request reaches the phone.
func TestLandLateLandsRightAfterTheFirstLookup(t *testing.T) {
	t.Parallel()
	fv, base := newServer(t, fakevendor.Options{HangTimeout: time.Minute, LandLateMax: time.Hour})
	if err := fv.AddRule(fakevendor.Rule{RefKey: "k", Mode: fakevendor.LandLate}); err != nil {
		t.Fatal(err)
	}
	c := smsClient(base)
	if rep := mustLookup(t, c, "k"); rep.Found { // before the send: does not count
		t.Fatalf("Lookup before the send = %+v", rep)
	}
	mustTimeOut(t, base, smsRequest("k", time.Time{}))
	if n := len(fv.Ledger()); n != 0 {
		t.Fatalf("ledger has %d entries after the send: land-late records nothing on arrival", n)
	}
	if rep := mustLookup(t, c, "other"); rep.Found || fv.Count("k") != 0 {
		t.Fatalf("a lookup of another refkey: %+v, count(k) %d; want it not to land k", rep, fv.Count("k"))
	}

	// The sender is long gone; the lookup still says "never received" ...
	if rep := mustLookup(t, c, "k"); rep.Found || rep.Count != 0 {
		t.Fatalf("first Lookup(k) after the send = %+v, want not found", rep)
	}
	// ... and by the time it was read, the message had reached the phone.
	led := fv.Ledger()
	if len(led) != 1 || led[0].RefKey != "k" || led[0].Call != 1 {
		t.Fatalf("ledger after the lookup = %+v, want k from call 1", led)
	}
	if rep := mustLookup(t, c, "k"); rep.Status != sms.ReportSent || rep.Count != 1 {
		t.Fatalf("next Lookup(k) = %+v, want SENT once", rep)
	}
	call := fv.CallLog()[0]
	if call.Mode != fakevendor.LandLate || !call.Accepted || !call.Landed || call.Expired ||
		call.LandedAt.Before(call.At) || !led[0].At.Equal(call.LandedAt) {
		t.Fatalf("call %+v entry %+v: want land-late, accepted, landed after it arrived, entry stamped at landing", call, led[0])
	}
	if f := fv.Fired(); f[fakevendor.LandLate] != 1 {
		t.Fatalf("fired = %v, want land-late once", f)
	}
}

// The acceptance deadline holds for a request that lands late: once the
// vendor's clock has passed its expireat it is dropped, never recorded, so
// the "never received" the lookup gave stays true.
func TestLandLatePastItsExpireAtIsDropped(t *testing.T) {
	t.Parallel()
	clk := newClock()
	fv, base := newServer(t, fakevendor.Options{Clock: clk.Now, HangTimeout: time.Minute, LandLateMax: time.Hour})
	if err := fv.AddRule(fakevendor.Rule{RefKey: "k", Mode: fakevendor.LandLate}); err != nil {
		t.Fatal(err)
	}
	c := smsClient(base)
	mustTimeOut(t, base, smsRequest("k", t0.Add(time.Minute)))
	clk.Set(t0.Add(2 * time.Minute))
	for i := range 2 {
		if rep := mustLookup(t, c, "k"); rep.Found {
			t.Fatalf("Lookup %d = %+v, want not found", i, rep)
		}
	}
	if n := fv.Count("k"); n != 0 {
		t.Fatalf("count = %d, want 0: past its expireat it can never reach a phone", n)
	}
	if call := fv.CallLog()[0]; call.Accepted || call.Landed || !call.Expired {
		t.Fatalf("call = %+v, want dropped: expired, not landed, not accepted", call)
	}
}

// With no lookup, a land-late request lands after LandLateMax, whether or
// not its sender still waits.
func TestLandLateLandsAfterLandLateMaxWithoutALookup(t *testing.T) {
	t.Parallel()
	fv, base := newServer(t, fakevendor.Options{HangTimeout: time.Minute, LandLateMax: 100 * time.Millisecond})
	if err := fv.SetDefault(fakevendor.LandLate); err != nil {
		t.Fatal(err)
	}
	mustTimeOut(t, base, smsRequest("k", time.Time{}))
	testenv.Eventually(t, 5*time.Second, "the request to land", func() bool { return fv.Count("k") == 1 })
	if call := fv.CallLog()[0]; !call.Landed || !call.Accepted || len(fv.Lookups()) != 0 {
		t.Fatalf("call %+v lookups %+v, want landed with no lookup", call, fv.Lookups())
	}
}

// Close drops a held request: it never lands, not even when a lookup
// comes afterwards.
func TestCloseDropsLandLateRequests(t *testing.T) {
	t.Parallel()
	fv, base := newServer(t, fakevendor.Options{HangTimeout: time.Minute, LandLateMax: time.Hour})
	if err := fv.AddRule(fakevendor.Rule{RefKey: "k", Mode: fakevendor.LandLate}); err != nil {
		t.Fatal(err)
	}
	tok := mustToken(t, base)
	errc := make(chan error, 1)
	go func() {
		_, _, err := send(context.Background(), base, tok, "k")
		errc <- err
	}()
	testenv.Eventually(t, 5*time.Second, "the send to arrive", func() bool { return fv.Calls() == 1 })
	if err := fv.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		if err == nil {
			t.Fatal("the held request was answered, want the connection closed")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not release the held request")
	}
	if rep := mustLookup(t, smsClient(base), "k"); rep.Found || fv.Count("k") != 0 || fv.CallLog()[0].Landed {
		t.Fatalf("after Close: lookup %+v count %d call %+v, want never landed", rep, fv.Count("k"), fv.CallLog()[0])
	}
}

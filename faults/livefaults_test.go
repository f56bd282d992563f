package faults

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/outboxchaos/outboxchaos/fakevendor"
	"github.com/outboxchaos/outboxchaos/system/notification"
	"github.com/outboxchaos/outboxchaos/system/sms"
)

// vendorWorld is a World with a fake vendor in it.
type vendorWorld struct {
	stubWorld
	fv *fakevendor.Server
}

func (w vendorWorld) Vendor() *fakevendor.Server { return w.fv }

// A vendor fault for one message counts the requests of its own kind: a
// report mode the lookups of that message, a send mode its sends.
func TestVendorRuleFiredCountsItsKindOfRequest(t *testing.T) {
	t.Parallel()
	fv := fakevendor.New(fakevendor.Options{Account: "a", Password: "p"})
	ts := httptest.NewServer(fv.Handler())
	t.Cleanup(ts.Close)
	t.Cleanup(func() { _ = fv.Close() })
	w := vendorWorld{fv: fv}
	ctx := context.Background()
	msg := notification.MessageID(7)

	var rules []*VendorRule
	for _, s := range []Spec{
		{Kind: "vendor", Mode: string(fakevendor.ReportPending), Msg: 7, Times: 2},
		{Kind: "vendor", Mode: string(fakevendor.Fail5xx), Msg: 7, Times: 1},
	} {
		f, err := s.Build()
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Inject(ctx, w); err != nil {
			t.Fatal(err)
		}
		rules = append(rules, f.(*VendorRule))
	}
	pending, fail := rules[0], rules[1]
	if fired, _ := pending.Fired(w); fired {
		t.Fatal("report-pending fired before any lookup")
	}

	c := sms.New(ts.URL, "a", "p", time.Second)
	c.Send(ctx, sms.Request{RefKey: msg, Phone: "010", From: "02", TemplateCode: "T", Text: "x"})
	if fired, _ := pending.Fired(w); fired {
		t.Fatal("report-pending fired on a send")
	}
	for range 3 {
		_, _ = c.Lookup(ctx, msg)
	}
	if fired, detail := pending.Fired(w); !fired || detail != msg+" fired 2 times" {
		t.Fatalf("report-pending Fired = %v %q, want fired 2 times", fired, detail)
	}
	if fired, detail := fail.Fired(w); !fired || detail != msg+" fired 1 times" {
		t.Fatalf("5xx Fired = %v %q, want fired 1 times: lookups are not sends", fired, detail)
	}
	if got, want := pending.String(), "vendor report-pending for "+msg+" ×2"; got != want {
		t.Fatalf("String() = %q, want %q", got, want)
	}
}

// TestArms: a pod armed with two failpoints carries both in one variable;
// each failpoint finds its pod by its own setting.
func TestArms(t *testing.T) {
	kv := "OUTBOXCHAOS_FAILPOINT=relay.refuse-publish:3,relay.misroute-publish:6"
	for setting, want := range map[string]bool{
		"OUTBOXCHAOS_FAILPOINT=relay.refuse-publish:3":   true,
		"OUTBOXCHAOS_FAILPOINT=relay.misroute-publish:6": true,
		"OUTBOXCHAOS_FAILPOINT=relay.misroute-publish:5": false,
		"OUTBOXCHAOS_KILLPOINT=relay.refuse-publish:3":   false,
		kv: true,
	} {
		if got := arms(kv, setting); got != want {
			t.Errorf("arms(%q, %q) = %v, want %v", kv, setting, got, want)
		}
	}
}

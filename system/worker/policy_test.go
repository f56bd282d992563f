package worker

import (
	"reflect"
	"sort"
	"testing"

	"github.com/outboxchaos/outboxchaos/system/canary"
)

// TestPolicyFor: with no canary the worker follows design §5; each worker
// canary changes exactly the rules it is meant to break; every other canary
// leaves the worker alone.
func TestPolicyFor(t *testing.T) {
	prod := policyFor("")
	want := policy{reconnect: true, claim: true, parkReason: true, recordPark: true}
	if prod != want {
		t.Fatalf("policyFor(\"\") = %+v, want %+v", prod, want)
	}
	changes := map[string][]string{
		canary.NoReconnect:        {"reconnect"},
		canary.AutoAck:            {"ackOnDelivery"},
		canary.NoDedup:            {"claim", "ignorePeek"},
		canary.CheckThenAct:       {"claim"},
		canary.ReleaseOnCancel:    {"releaseOnCancel"},
		canary.AckBeforeResult:    {"ackBeforeResult"},
		canary.RetryUnknown:       {"retryUnknown"},
		canary.ParkWithoutReason:  {"parkReason"},
		canary.AckFailedRelease:   {"ackFailedRelease"},
		canary.AlertOnRetry:       {"alertOnRetry"},
		canary.ConsentAtRelayOnly: {"skipConsent"},
		canary.AdHoursUTC:         {"utcAdHours"},
		canary.RequeueOnDBFailure: {"requeueOnDBFailure"},
		canary.AlertBeforePark:    {"alertBeforePark"},
		canary.ParkUnrecorded:     {"recordPark"},
	}
	for _, bug := range canary.Names {
		got := differing(prod, policyFor(bug))
		if w := changes[bug]; !reflect.DeepEqual(got, w) {
			t.Errorf("canary %s changes %v, want %v", bug, got, w)
		}
	}
}

// differing names the fields in which a and b differ, sorted.
func differing(a, b policy) []string {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	var out []string
	for i := range va.NumField() {
		if va.Field(i).Bool() != vb.Field(i).Bool() {
			out = append(out, va.Type().Field(i).Name)
		}
	}
	sort.Strings(out)
	return out
}

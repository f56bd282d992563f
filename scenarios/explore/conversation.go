package explore

import (
	"github.com/outboxchaos/outboxchaos/fakevendor"
	"github.com/outboxchaos/outboxchaos/faults"
)

// conversationSends are the answers a send may get in a drawn
// conversation: accepted (so a later answer meets a copy already on the
// phone), every way of not knowing, every definite refusal, and a request
// that lands late.
var conversationSends = []fakevendor.Mode{fakevendor.Accept, fakevendor.AcceptHang, fakevendor.Accept5xx, fakevendor.AcceptReset,
	fakevendor.LateBody, fakevendor.Malformed, fakevendor.Hang, fakevendor.Fail5xx, fakevendor.Reset, fakevendor.Status401,
	fakevendor.Status429, fakevendor.FailCode, fakevendor.LandLate, fakevendor.Undelivered}

// conversationLookups are the answers a report lookup may get: not ready,
// not found, the report's truth, the opposite of it, and every way of not
// answering.
var conversationLookups = []fakevendor.Mode{fakevendor.ReportPending, fakevendor.ReportMissing, fakevendor.Report,
	fakevendor.ReportWrong, fakevendor.Lookup5xx, fakevendor.LookupHang, fakevendor.LookupMalformed}

// conversation scripts one message's whole exchange with the vendor, drawn
// after every older choice so saved failfiles keep their schedules: two or
// three answers to its sends, in order (the first send, the worker's
// retries, a redelivered copy's, the reconciler's re-sends), then up to
// three answers to the reconciler's lookups of it, each once. Every answer
// past the script is the truth. A report is never wrong or missing twice
// in a row (the vendor contract, docs/reconcile.md): a second one in a
// row is drawn as not ready.
func (s *Schedule) conversation(d Draw) {
	if d.Int("vendor conversation", 0, 2) != 0 {
		return
	}
	msg := int64(d.Int("conversation msg", 1, s.PerKind*len(s.Kinds)))
	say := func(m fakevendor.Mode) {
		s.Faults = append(s.Faults, Timed{Spec: faults.Spec{Kind: faults.KindVendor, Mode: string(m), Msg: msg, Times: 1}, When: WhenFirst})
	}
	for range d.Int("conversation sends", 2, 3) {
		say(conversationSends[d.Int("conversation send", 0, len(conversationSends)-1)])
	}
	misled := false
	for range d.Int("conversation lookups", 0, 3) {
		m := conversationLookups[d.Int("conversation lookup", 0, len(conversationLookups)-1)]
		wrong := m == fakevendor.ReportWrong || m == fakevendor.ReportMissing
		if wrong && misled {
			m, wrong = fakevendor.ReportPending, false
		}
		misled = wrong
		say(m)
	}
}

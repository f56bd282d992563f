// Package fakevendor owns the stand-in for the SMS vendor (design §5): an HTTP
// server speaking the same token / send / report API as the real vendor
// client in system/sms, with programmable faults, and the handset ledger —
// the ground truth of what reached a customer's phone, recorded even when the
// caller gave up waiting. It also owns AlertSink, the Slack-compatible webhook
// receiver that collects the pipeline's operations alerts.
//
// # The acceptance deadline
//
// A send may carry "expireat" (RFC 3339), its acceptance deadline; a
// malformed one is a 400. The vendor records a send in the ledger — the only
// way it reaches a phone — at one moment: on arrival for the recording
// modes, at landing for land-late. If the vendor's clock (Options.Clock)
// reads after the send's expireat at that moment, the send is not recorded,
// and where the mode still answers the request the answer is HTTP 410 with
// code "4100" ("request expired"): accept and accept-5xx at once,
// accept-hang if the client waits out the hang, while accept-reset still
// closes the connection and a land-late request is dropped.
//
// This is the contract that makes a report's "never received" definitive:
// once the vendor's clock has passed a request's expireat, that request can
// never reach a phone, however late it arrives. Before then, "never
// received" only means "not yet" (see land-late).
//
// # Reports
//
// GET /v3/report?refkey=K answers {"refkey", "found", "status", "reason",
// "messagekey", "count"}: status SENT when K is in the ledger (count = how
// many times), FAILED with a reason when the vendor knows the request but
// reports a definite delivery failure (mode undelivered), PENDING when the
// report is not ready, and found=false when the vendor never received K.
// SENT wins over FAILED when both apply.
//
// # Modes
//
// A Rule (or the default) picks what the vendor does with one request. Send
// modes (POST /v3/message, also valid as the default):
//
//   - accept: record, answer 200 code 1000.
//   - accept-hang: record, then hang past the client timeout.
//   - accept-hold: record, then hold the answer, with no timer, until the
//     rules are reset (the harness recovers the fault); then answer 500.
//     A harness acts while the call is provably in flight.
//   - hang: hang past the client timeout without recording.
//   - hold: hold without recording, with no timer, until the rules are
//     reset; then answer 504. Never reaches a phone, yet the client cannot
//     tell (outcome unknown): the window accept-hold gives, for a message
//     that was never sent.
//   - undelivered: hang like hang; the report then says FAILED
//     "3101 undeliverable".
//   - land-late: hold without answering or recording; the request lands
//     later (see below).
//   - accept-5xx: record, then answer 500.
//   - 5xx: answer 503 without recording.
//   - 401: answer 401 without recording.
//   - 403: answer 403 without recording.
//   - 429: answer 429 without recording.
//   - reset: close the connection without answering or recording.
//   - accept-reset: record, then close the connection without answering.
//   - fail-code: answer HTTP 200 whose body carries failure code 3005, without recording.
//   - late-body: record, send the 200 status and headers at once and the body only after the client gave up.
//   - malformed: record, then answer 200 with a body that is not JSON.
//
// The token mode (POST /v1/token, rules only):
//
//   - token-fail: the token endpoint answers 500.
//
// Report modes (GET /v3/report, rules only):
//
//   - report: the truthful answer, what a lookup gets when no rule matches.
//   - report-missing: found=false even if the vendor has it.
//   - report-pending: found=true, status PENDING.
//   - report-wrong: the opposite of the truth: FAILED for a refkey in the
//     ledger, SENT (count 1) for one that is not.
//   - lookup-hang: hang until the client gives up, HangTimeout or Close,
//     then answer 504 if the client is still there.
//   - lookup-5xx: answer 503.
//   - lookup-malformed: answer 200 with a body that is not JSON.
//
// A land-late request is held until the client gives up, HangTimeout passes
// (then it is answered 504) or Close; meanwhile it is neither answered nor
// recorded. It lands — is recorded in the ledger, with Entry.At the landing
// time and Entry.Call its own call number, unless by then its expireat has
// passed by the vendor's clock (it is dropped) — as soon as the vendor has
// answered the first report lookup for its refkey made after it arrived,
// whatever that answer said (a lookup-hang answers when its hang ends; a
// lookup refused for its token does not count), or after
// Options.LandLateMax if no such lookup comes. The answer is written before the landing but the landing happens
// before the answer's request ends: by the time a caller has read "not
// received", the message has reached the phone. Landing does not depend on
// the sender still waiting; Close drops every request not yet landed.
//
// Every request is logged whatever its mode: sends in CallLog, report
// requests in Lookups; Fired counts every mode applied except the truthful
// accept and report.
//
// Other processes steer a running server through its JSON admin endpoints
// (see AdminClient); tests in the same process call the Server methods.
//
// Files: server.go holds the Server and its lifecycle, modes.go the fault
// modes and rules, ledger.go the handset ledger and the call log,
// vendorapi.go the vendor's token and send endpoints, landlate.go the
// land-late requests, report.go the report endpoint and its log, admin.go
// the admin endpoints and AdminClient, alerts.go the AlertSink.
package fakevendor

// Package fakevendor owns the stand-in for the SMS vendor (SPEC §5): an HTTP
// server speaking the same token / send / report API as the real vendor
// client in system/sms, with programmable faults, and the handset ledger —
// the ground truth of what reached a customer's phone, recorded even when the
// caller gave up waiting. It also owns AlertSink, the Slack-compatible webhook
// receiver that collects the pipeline's operations alerts.
//
// Other processes steer a running server through its JSON admin endpoints
// (see AdminClient); tests in the same process call the Server methods.
//
// Files: server.go holds the Server and its lifecycle, modes.go the fault
// modes and rules, ledger.go the handset ledger and the call log,
// vendorapi.go the vendor's token / send / report endpoints, admin.go the
// admin endpoints and AdminClient, alerts.go the AlertSink.
package fakevendor

package testenv

import (
	"context"
	"sync"

	"github.com/outboxchaos/outboxchaos/system/alert"
)

// AlertRecorder is an alert.Sender that keeps every alert it is sent, in
// order, for a test to inspect. The zero value is ready to use; it is safe
// for concurrent use.
type AlertRecorder struct {
	mu     sync.Mutex
	alerts []alert.Alert
}

var _ alert.Sender = (*AlertRecorder)(nil)

// Send records a.
func (r *AlertRecorder) Send(_ context.Context, a alert.Alert) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.alerts = append(r.alerts, a)
}

// All returns a copy of every alert recorded so far, in order.
func (r *AlertRecorder) All() []alert.Alert {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]alert.Alert(nil), r.alerts...)
}

// OfKind returns the alerts recorded so far whose Kind is kind, in order.
func (r *AlertRecorder) OfKind(kind string) []alert.Alert {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []alert.Alert
	for _, a := range r.alerts {
		if a.Kind == kind {
			out = append(out, a)
		}
	}
	return out
}

// Count returns how many alerts have been recorded so far.
func (r *AlertRecorder) Count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.alerts)
}

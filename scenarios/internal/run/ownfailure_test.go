package run

import (
	"strings"
	"testing"
)

func TestOwnFailureIn(t *testing.T) {
	t.Parallel()
	refused := "outboxchaos enqueue: Postgres at postgres://…: refused: failed to connect to `user=postgres database=test`: server error: FATAL: sorry, too many clients already (SQLSTATE 53300)\n"
	if err := ownFailureIn([]podOutput{{"relay-1", "relay started\n"}, {"job-1", refused}, {"worker-1", refused}}); err == nil || !strings.Contains(err.Error(), "seen by job-1:") {
		t.Errorf("too many clients: %v, want an error naming job-1, the first to see it", err)
	}
	// An outage the run injected (a cut link) reads otherwise: judged.
	cut := "outboxchaos enqueue: Postgres at postgres://…: refused: dial tcp 127.0.0.1:34231: connect: connection refused\n"
	if err := ownFailureIn([]podOutput{{"job-1", cut}}); err != nil {
		t.Errorf("a cut link: %v, want nil", err)
	}
	// RabbitMQ failing internally, as 3.10 does once its dead-letter
	// workers' supervisor gave up: not judged either.
	internal := `outboxchaos relay: declare queue oc_x.notifications.retry: Exception (541) Reason: "INTERNAL_ERROR"` + "\n"
	if err := ownFailureIn([]podOutput{{"worker-1", cut}, {"relay-1", internal}}); err == nil || !strings.Contains(err.Error(), "RabbitMQ failed internally") || !strings.Contains(err.Error(), "seen by relay-1:") {
		t.Errorf("an internal error of the broker: %v, want an error naming RabbitMQ and relay-1", err)
	}
	// A refused publish the pipeline must handle (a full queue) is no
	// failure of the broker's.
	full := `publish: Exception (406) Reason: "PRECONDITION_FAILED"` + "\n"
	if err := ownFailureIn([]podOutput{{"relay-1", full}}); err != nil {
		t.Errorf("a full queue: %v, want nil", err)
	}
}

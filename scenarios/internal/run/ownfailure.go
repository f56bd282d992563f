package run

import (
	"fmt"
	"strings"
)

// ownFailures is what a service says when it fails on its own, not
// through any fault the harness injects: PostgreSQL with no room left for
// a connection (too_many_connections, SQLSTATE 53300, "sorry, too many
// clients already"), which the shared service's own limit does when too
// many runs go at once; RabbitMQ answering a method with an internal
// error (AMQP 541 INTERNAL_ERROR), which RabbitMQ 3.10 does to every
// quorum queue declared after the supervisor of its dead-letter workers
// gave up (it restarts them on a deleted queue until it reaches its
// restart limit, and stays down until the broker's application restarts).
var ownFailures = []struct{ mark, service, cause string }{
	{"SQLSTATE 53300", "PostgreSQL refused a connection: too many clients (max_connections)", "the machine's limit"},
	{"Exception (541)", "RabbitMQ failed internally (AMQP 541 INTERNAL_ERROR)", "the broker's own failure (rabbitmqctl stop_app; rabbitmqctl start_app)"},
}

// podOutput is one pod life's name and output.
type podOutput struct{ pod, out string }

// ownFailureIn says which shared service failed on its own, from the
// pods' output, or nil; the first pod to name it, in start order, names
// it here too, so a replay says the same. A run where that happened is
// not the run it meant to be (an outage nobody injected stopped a pod),
// so it is not judged: fewer runs at once (--parallel, CHAOSPAR) or a
// larger limit runs it.
func ownFailureIn(outputs []podOutput) error {
	for _, x := range ownFailures {
		for _, o := range outputs {
			if strings.Contains(o.out, x.mark) {
				return fmt.Errorf("%s, seen by %s: %s, not a fault of the run", x.service, o.pod, x.cause)
			}
		}
	}
	return nil
}

// ownFailure is ownFailureIn over every life of the run's pods.
func (e *Env) ownFailure() error {
	var outputs []podOutput
	for _, p := range e.sup.Pods() {
		outputs = append(outputs, podOutput{p.Name(), p.Output()})
	}
	return ownFailureIn(outputs)
}

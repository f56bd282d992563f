package run

import (
	"fmt"
	"strings"
)

// exhaustion is what a service says when it has no room left for a
// connection: PostgreSQL's too_many_connections (SQLSTATE 53300, "sorry,
// too many clients already"). No fault the harness injects does that;
// the shared service's own limit does, when too many runs go at once.
var exhaustion = []struct{ mark, service string }{
	{"SQLSTATE 53300", "PostgreSQL refused a connection: too many clients (max_connections)"},
}

// podOutput is one pod life's name and output.
type podOutput struct{ pod, out string }

// exhaustedIn says which shared service ran out of connections, from the
// pods' output, or nil; the first pod to name it, in start order, names
// it here too, so a replay says the same. A run where that happened is
// not the run it meant to be (an outage nobody injected stopped a pod),
// so it is not judged: fewer runs at once (--parallel, CHAOSPAR) or a
// larger limit runs it.
func exhaustedIn(outputs []podOutput) error {
	for _, x := range exhaustion {
		for _, o := range outputs {
			if strings.Contains(o.out, x.mark) {
				return fmt.Errorf("%s, seen by %s: the machine's limit, not a fault of the run", x.service, o.pod)
			}
		}
	}
	return nil
}

// exhausted is exhaustedIn over every life of the run's pods.
func (e *Env) exhausted() error {
	var outputs []podOutput
	for _, p := range e.sup.Pods() {
		outputs = append(outputs, podOutput{p.Name(), p.Output()})
	}
	return exhaustedIn(outputs)
}

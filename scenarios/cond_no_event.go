package scenarios

import (
	"context"
	"errors"
	"fmt"

	"github.com/outboxchaos/outboxchaos/checker"
)

// A no_event condition holds while no matching event has been logged. It
// is a fact only once the pod that would log the event can no longer act
// (frozen at a pause-point, or dead): a step waits on it together with
// that pod's state, e.g. "worker-1 is frozen and never acked, or the
// broker shows it took the ack".

func describeNoEvent(c *Cond) string {
	return fmt.Sprintf("no event %s %s %v", c.NoEvent.Name, c.NoEvent.Pod, c.NoEvent.Attrs)
}

func validateNoEvent(c *Cond) error {
	switch {
	case c.NoEvent.Name == "":
		return errors.New("no_event: needs name")
	case c.NoEvent.N != 0 || c.NoEvent.Fresh:
		return errors.New("no_event: takes name, pod and attrs only (no n, no fresh)")
	}
	return nil
}

func holdsNoEvent(_ context.Context, p *probe, c *Cond) (bool, error) {
	return checker.Count(p.r.e.history(), c.NoEvent.Name, c.NoEvent.Pod, c.NoEvent.Attrs) == 0, nil
}

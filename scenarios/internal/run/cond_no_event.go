package run

import (
	"context"

	"github.com/outboxchaos/outboxchaos/checker"
	"github.com/outboxchaos/outboxchaos/scenarios/scenario"
)

// A no_event condition holds while no matching event has been logged. It
// is a fact only once the pod that would log the event can no longer act
// (frozen at a pause-point, or dead): a step waits on it together with
// that pod's state, e.g. "worker-1 is frozen and never acked, or the
// broker shows it took the ack".

func holdsNoEvent(_ context.Context, p *probe, c *scenario.Cond) (bool, error) {
	return checker.Count(p.r.e.history(), c.NoEvent.Name, c.NoEvent.Pod, c.NoEvent.Attrs) == 0, nil
}

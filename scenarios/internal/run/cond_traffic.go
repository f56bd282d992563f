package run

import (
	"context"
	"fmt"

	"github.com/outboxchaos/outboxchaos/rig"
	"github.com/outboxchaos/outboxchaos/scenarios/scenario"
)

// trafficCount reads the link's count of t's messages.
func (r *runner) trafficCount(t *scenario.TrafficCond) (int64, error) {
	l, err := r.e.Link(t.Link)
	if err != nil {
		return 0, err
	}
	return l.Messages(direction(t), rig.Message(t.Message)), nil
}

func holdsTraffic(_ context.Context, p *probe, c *scenario.Cond) (bool, error) {
	base, ok := p.traffic[c.Traffic]
	if !ok {
		return false, fmt.Errorf("traffic on %s: no count from the step's start", c.Traffic.Link)
	}
	n, err := p.r.trafficCount(c.Traffic)
	return n-base >= c.Traffic.Want(), err
}

// direction is the side of the link that sends t's message.
func direction(t *scenario.TrafficCond) rig.Direction {
	switch rig.Message(t.Message) {
	case rig.Confirm, rig.Return:
		return rig.Downstream
	}
	return rig.Upstream
}

package scenarios

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/outboxchaos/outboxchaos/faults"
	"github.com/outboxchaos/outboxchaos/world"
)

// A traffic condition holds once a link carried n protocol messages of a
// kind since the step began: what the harness sees a pod do on its link
// without the pod's help (no log line, no kill-point), so it times a kill
// from outside in a relay written in any language. Publishes and
// statements are counted as the pod sends them, confirms and returns as
// the server sends them, before any fault on the link acts on them: a
// publish a stall swallows still counts.
type TrafficCond struct {
	Link    string `json:"link"`
	Message string `json:"message"`     // publish, confirm, return or statement
	N       int    `json:"n,omitempty"` // at least n; default 1
}

// direction is the side of the link that sends m.
func (t *TrafficCond) direction() world.Direction {
	switch world.Message(t.Message) {
	case world.Confirm, world.Return:
		return world.Downstream
	}
	return world.Upstream
}

func (t *TrafficCond) want() int64 { return int64(max(t.N, 1)) }

func describeTraffic(c *Cond) string {
	return fmt.Sprintf("%d %s message(s) on %s since the step began", c.Traffic.want(), c.Traffic.Message, c.Traffic.Link)
}

func validateTraffic(c *Cond) error {
	t := c.Traffic
	var kinds []string
	for _, m := range world.Messages {
		kinds = append(kinds, string(m))
	}
	switch {
	case !slices.Contains(faults.LinkNames, t.Link):
		return fmt.Errorf("traffic: unknown link %q (%s)", t.Link, strings.Join(faults.LinkNames, ", "))
	case !slices.Contains(kinds, t.Message):
		return fmt.Errorf("traffic: unknown message %q (%s)", t.Message, strings.Join(kinds, ", "))
	case t.N < 0:
		return fmt.Errorf("traffic: n %d is negative", t.N)
	}
	return nil
}

// trafficCount reads the link's count of t's messages.
func (r *runner) trafficCount(t *TrafficCond) (int64, error) {
	l, err := r.e.Link(t.Link)
	if err != nil {
		return 0, err
	}
	return l.Messages(t.direction(), world.Message(t.Message)), nil
}

func holdsTraffic(_ context.Context, p *probe, c *Cond) (bool, error) {
	base, ok := p.traffic[c.Traffic]
	if !ok {
		return false, fmt.Errorf("traffic on %s: no count from the step's start", c.Traffic.Link)
	}
	n, err := p.r.trafficCount(c.Traffic)
	return n-base >= c.Traffic.want(), err
}

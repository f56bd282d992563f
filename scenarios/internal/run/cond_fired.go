package run

import (
	"context"
	"errors"
	"fmt"

	"github.com/outboxchaos/outboxchaos/scenarios/scenario"
)

// A fired condition holds once every fault its during step put in place
// has met the pipeline (traffic reached the toxic, the pod hit the point):
// the step's other condition may also come without the fault's help (a
// publish that timed out because a loaded broker was slow), so a step that
// names a fault as the cause waits for both.

var errFiredOutsideDuring = errors.New("fired: only a during step's own condition can wait for its faults")

func holdsFired(_ context.Context, p *probe, _ *scenario.Cond) (bool, error) {
	if p.faults == nil {
		return false, fmt.Errorf("%w: %w", errFailed, errFiredOutsideDuring)
	}
	for _, f := range p.faults {
		if ok, _ := p.r.eng.Fired(f); !ok {
			return false, nil
		}
	}
	return true, nil
}

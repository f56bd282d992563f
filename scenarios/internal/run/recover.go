package run

import (
	"context"
	"fmt"

	"github.com/outboxchaos/outboxchaos/scenarios/scenario"
)

// recoverStep takes away faults an inject step put in place, before the
// end of the run: two faults that overlap without nesting (a link slowed,
// another stalled, the first taken away while the second holds) are an
// inject, an inject and a recover. A fault not in place is an error: the
// schedule is wrong, not the pipeline.
func (r *runner) recoverStep(ctx context.Context, st scenario.Step) error {
	for _, sp := range st.Faults {
		want, err := sp.Build()
		if err != nil {
			return err
		}
		found := false
		for _, f := range r.eng.Open() {
			if f.String() == want.String() {
				found = true
				if err := r.eng.Recover(ctx, f); err != nil {
					return err
				}
			}
		}
		if !found {
			return fmt.Errorf("recover %s: not in place (recover takes away what an inject step put in place)", want)
		}
	}
	return nil
}

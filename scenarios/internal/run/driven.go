package run

import (
	"context"
	"fmt"
	"time"

	"github.com/outboxchaos/outboxchaos/checker"
	"github.com/outboxchaos/outboxchaos/faults"
	"github.com/outboxchaos/outboxchaos/rig"
)

// What a driver of its own (the simulator, which opens the run's world
// with Open and owns its clock) asks of the run: pods that do one run,
// and whether anything is in flight, by the rule a settling run jumps on.

// InFlight is the rule a settling run jumps its clock on (look), for a
// driver that owns the clock and keeps its own timers: busy says what is
// in flight ("" if nothing), sig is a signature of everything that moves.
// Nothing is in flight only if busy is "" on two looks in a row whose
// signatures agree. q are the queues' depths the driver read; eng is its
// fault engine, whose open faults count as in flight as a settling run's
// do. Beyond the run's rule, a request the vendor holds is in flight (the
// driver's timers know nothing of its landing), and so is a one-shot pod
// that has not exited.
func (e *Env) InFlight(ctx context.Context, eng *faults.Engine, q checker.QueueDepths) (busy, sig string, err error) {
	switch {
	case e.OneShots() > 0:
		return "a one-shot pod runs", "", nil
	case e.vendor.Held() > 0:
		return "the vendor holds a request", "", nil
	}
	l, err := e.look(ctx, eng, checker.State{Queues: q, WorkerHeld: e.WorkerHeld()})
	if err != nil {
		return "", "", err
	}
	return l.busy, fmt.Sprintf("%s calls=%d alerts=%d", l.sig, e.vendor.Calls(), len(e.Sink.Alerts())), nil
}

// StartOnce starts a pod of role that does one run and exits (args ask
// for one run: --once), as a cron job's pod does. It counts among the
// run's one-shot pods (OneShots) until it exited; one still running after
// bound is killed, as a job's deadline would. done, if set, runs once the
// pod exited.
func (e *Env) StartOnce(ctx context.Context, role string, env, args []string, bound time.Duration, done func(*rig.Pod)) error {
	p, err := e.StartRole(ctx, role, env, args)
	if err != nil {
		return err
	}
	e.oneShots.Add(1)
	go func() {
		defer e.oneShots.Add(-1)
		t := time.NewTimer(bound)
		defer t.Stop()
		select {
		case <-p.Done():
		case <-t.C:
			e.Logf("harness", "%s still running after %s: killed", p.Name(), bound)
			_ = p.Kill()
			<-p.Done()
		}
		if done != nil {
			done(p)
		}
	}()
	return nil
}

// OneShots counts the one-shot pods (StartOnce) that have not exited, or
// whose done has not returned.
func (e *Env) OneShots() int { return int(e.oneShots.Load()) }

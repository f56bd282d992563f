package faults

import (
	"context"
	"fmt"
)

// Kill SIGKILLs a running pod, as a node's OOM killer or a crashed host
// would: whatever it held in flight is cut off mid-step. It fired when the
// pod exited; Recover does nothing (a deployment restarts its pods).
type Kill struct {
	Pod string
}

// Family is "kill".
func (k *Kill) Family() string { return KindKill }

// Target is the pod.
func (k *Kill) Target() string { return k.Pod }

// Inject sends SIGKILL.
func (k *Kill) Inject(_ context.Context, w World) error {
	p, err := w.Pod(k.Pod)
	if err != nil {
		return err
	}
	w.Logf("harness", "SIGKILL %s", k.Pod)
	return p.Kill()
}

// Momentary: the signal is sent as it is injected.
func (*Kill) Momentary() {}

// Recover does nothing: a killed pod stays dead.
func (k *Kill) Recover(context.Context, World) error { return nil }

// Fired reports whether the pod exited.
func (k *Kill) Fired(w World) (bool, string) {
	p, err := w.Pod(k.Pod)
	if err != nil {
		return false, err.Error()
	}
	select {
	case <-p.Done():
		return true, fmt.Sprintf("%s exited %d", k.Pod, p.ExitCode())
	default:
		return false, k.Pod + " still running"
	}
}

func (k *Kill) String() string { return "SIGKILL " + k.Pod }

func buildKill(s Spec) (Fault, error) {
	if s.Pod == "" {
		return nil, fmt.Errorf("needs pod (e.g. worker-1)")
	}
	return &Kill{Pod: s.Pod}, nil
}

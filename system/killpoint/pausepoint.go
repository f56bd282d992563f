package killpoint

import (
	"fmt"
	"os"
	"syscall"
)

// Pause-points freeze the process instead of killing it: on the armed hit
// of a kill-point's name the process writes "PAUSEPOINT <name> hit <n>" to
// stderr and stops itself (SIGSTOP), holding whatever it holds — a
// delivery past the peek, an open transaction — until the harness sends
// SIGCONT. A harness forces a window with it: two copies of a message past
// the peek at once, one in a frozen process. Armed like kill-points, with
// the same names and grammar:
//
//	OUTBOXCHAOS_PAUSEPOINT=worker.before-claim        # freeze on the first hit
const PauseEnvVar = "OUTBOXCHAOS_PAUSEPOINT"

var pauseSet pointSet

// stop freezes the process; tests replace it.
var stop = func() { _ = syscall.Kill(os.Getpid(), syscall.SIGSTOP) }

// ArmPause arms the pause-points of spec (kill-point names), replacing those
// armed before.
func ArmPause(spec string) error {
	points, err := parseSpec("pause-point", spec, Names)
	if err != nil {
		return err
	}
	pauseSet.arm(points)
	return nil
}

// pause freezes the process if p is an armed pause-point on this hit.
func pause(p string) {
	if n, fire := pauseSet.hit(p); fire {
		fmt.Fprintf(os.Stderr, "PAUSEPOINT %s hit %d\n", p, n)
		stop()
	}
}

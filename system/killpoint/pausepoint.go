package killpoint

import (
	"fmt"
	"os"
	"os/signal"
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

// stop freezes the process and returns once it is continued; tests
// replace it. SIGSTOP to oneself takes effect asynchronously (the calling
// goroutine was seen to run a database round trip before the stop landed),
// so the caller also waits for SIGCONT: it cannot go past its point until
// the harness continues the process.
var stop = func() {
	cont := make(chan os.Signal, 1)
	signal.Notify(cont, syscall.SIGCONT)
	defer signal.Stop(cont)
	_ = syscall.Kill(os.Getpid(), syscall.SIGSTOP)
	<-cont
}

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

// Package killpoint owns the fault hooks compiled into system/: kill-points,
// at which a process dies as if the kernel killed it (SIGKILL: no deferred
// code, sockets dropped), and failpoints, which return an injected error
// instead (see Fail).
//
// The kill-points sit at each boundary of the design §6 failure table. They
// cost one atomic load when nothing is armed. A harness arms them for a
// child process through its environment, which the process's entry point
// (cmd/) hands to ArmFromEnv at start-up:
//
//	OUTBOXCHAOS_KILLPOINT=relay.after-claim      # first hit
//	OUTBOXCHAOS_KILLPOINT=worker.after-claim:3   # third hit
//
// Kill-points and failpoints share one spec grammar: a comma-separated list
// of "name" or "name:N" (for kill-points the first armed hit reached kills).
// Just before dying the process writes "KILLPOINT <name> hit <n>" to stderr,
// so the harness can tell that the fault fired.
package killpoint

import (
	"fmt"
	"os"
	"runtime/coverage"
	"syscall"
)

// The named kill-points. Keep in step with the failure table (design §6).
const (
	JobBeforeCommit   = "job.before-commit"
	JobAfterCoupon    = "job.after-coupon" // the anniversary coupon is committed, its outbox row not yet
	RelayAfterClaim   = "relay.after-claim"
	RelayAfterPublish = "relay.after-publish"
	RelayAfterConfirm = "relay.after-confirm"
	// RelayBeforeMark: the confirmed rows' mark is about to be written (a
	// peer relay under test hits it before its own "done" write, which may
	// come later than its confirm).
	RelayBeforeMark = "relay.before-mark"
	// WorkerOnDelivery: a delivery has just arrived, nothing done yet.
	WorkerOnDelivery    = "worker.on-delivery"
	WorkerBeforeClaim   = "worker.before-claim"
	WorkerAfterClaim    = "worker.after-claim"
	WorkerAfterSend     = "worker.after-send"
	WorkerAfterResult   = "worker.after-result"
	CleanupBeforeUpdate = "cleanup.before-update"
	// A final status is committed: the row will never be looked at again,
	// so its alert must already be out.
	WorkerAfterErrorResult = "worker.after-error-result"
	WorkerAfterPark        = "worker.after-park" // the parked copy is confirmed and the delivery acked
	RelayAfterFinish       = "relay.after-finish"
	// RelayAfterFail: a failed publish's backoff is committed (with its
	// attempt count): an alert this attempt owes must already be out.
	RelayAfterFail = "relay.after-fail"
	// The reconciler (system/reconcile): after a lookup was answered,
	// after a settlement's alert before its write, after a re-send claimed
	// the row, after the re-send's vendor call.
	ReconcileAfterLookup      = "reconcile.after-lookup"
	ReconcileBeforeSettle     = "reconcile.before-settle"
	ReconcileAfterResendClaim = "reconcile.after-resend-claim"
	ReconcileAfterResend      = "reconcile.after-resend"
	// RelayBeforePublish: a batch's channel is open and none of its
	// publishes is written yet. The publisher is held meanwhile, so no
	// other batch's confirms can replace the channel: a pause here keeps
	// an earlier batch's answers from ending its channel until this batch
	// is on it.
	RelayBeforePublish = "relay.before-publish"
)

// Names lists every kill-point compiled into system/.
var Names = []string{
	JobBeforeCommit, JobAfterCoupon, RelayAfterClaim, RelayAfterPublish, RelayAfterConfirm, RelayBeforeMark,
	WorkerOnDelivery, WorkerBeforeClaim, WorkerAfterClaim, WorkerAfterSend, WorkerAfterResult,
	CleanupBeforeUpdate, WorkerAfterErrorResult, WorkerAfterPark, RelayAfterFinish, RelayAfterFail,
	ReconcileAfterLookup, ReconcileBeforeSettle, ReconcileAfterResendClaim, ReconcileAfterResend,
	RelayBeforePublish,
}

// EnvVar is the environment variable that arms kill-points.
const EnvVar = "OUTBOXCHAOS_KILLPOINT"

// die kills the process; tests replace it. A binary built with -cover
// writes its coverage counters first (GOCOVERDIR), since SIGKILL skips the
// write at exit: the branches it reached before the point still count.
var die = func() {
	if dir := os.Getenv("GOCOVERDIR"); dir != "" {
		_ = coverage.WriteCountersDir(dir) // not built with -cover: nothing to write
	}
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {}
}

// Arm arms the kill-points named by spec ("name", "name:N", or a comma list
// of them), replacing those armed before. It fails, arming nothing, for a
// name that is not compiled in.
func Arm(spec string) error {
	points, err := parseSpec("kill-point", spec, Names)
	if err != nil {
		return err
	}
	killSet.arm(points)
	return nil
}

// Disarm disarms every kill-point and pause-point and forgets their hits
// (tests).
func Disarm() { killSet.arm(nil); pauseSet.arm(nil) }

// Known reports whether n names a compiled-in kill-point.
func Known(n string) bool { return contains(Names, n) }

// Hit marks that execution reached point p. If p is armed and this is its
// armed hit, the process dies here; if it is an armed pause-point, the
// process freezes here until continued.
func Hit(p string) {
	pause(p)
	if n, fire := killSet.hit(p); fire {
		fmt.Fprintf(os.Stderr, "KILLPOINT %s hit %d\n", p, n)
		die()
	}
}

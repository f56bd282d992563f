package killpoint

import (
	"errors"
	"fmt"
	"os"
)

// Failpoints are named points that return an injected error instead of
// killing the process (like etcd's gofail): the write after them is made to
// fail while the process lives on. Armed through the environment (see
// ArmFromEnv), with the kill-points' spec grammar:
//
//	OUTBOXCHAOS_FAILPOINT=worker.result-update        # first hit fails
//	OUTBOXCHAOS_FAILPOINT=worker.result-update:2,x:1  # several, each on its Nth hit
//
// A firing failpoint writes "FAILPOINT <name> hit <n>" to stderr.
const (
	FailAnniversaryOutbox = "job.anniversary-outbox-insert"
	FailClaimResponse     = "worker.claim-response"
	FailResultUpdate      = "worker.result-update"
	// FailFinishResponse: the relay's final-status UPDATE committed, then
	// its answer is lost (the connection dropped after the commit).
	FailFinishResponse = "relay.finish-response"
	// FailMisroute sends one publish to a routing key nothing is bound to:
	// a binding missing for exactly that message, so RabbitMQ returns it
	// (and acks it) in the middle of a batch whose others are confirmed.
	FailMisroute = "relay.misroute-publish"
	// FailRefuse sends one publish to a queue that holds nothing and
	// refuses what overflows it (x-max-length 0, reject-publish): RabbitMQ
	// nacks it, as it nacks a publish to a full queue, in the middle of a
	// batch whose others are confirmed.
	FailRefuse = "relay.refuse-publish"
	// FailReleaseResponse: the worker's claim release (the DELETE of its
	// SENDING row after a definite not-sent) committed, then its answer is
	// lost.
	FailReleaseResponse = "worker.release-response"
)

// FailNames lists every failpoint compiled into system/.
var FailNames = []string{FailAnniversaryOutbox, FailClaimResponse, FailResultUpdate, FailFinishResponse, FailMisroute, FailRefuse, FailReleaseResponse}

// FailEnvVar is the environment variable that arms failpoints.
const FailEnvVar = "OUTBOXCHAOS_FAILPOINT"

// ErrInjected wraps every injected failure.
var ErrInjected = errors.New("injected failure")

// ArmFail arms the failpoints of spec, a comma-separated list of "name" or
// "name:N", replacing those armed before. It fails, arming nothing, for a
// name that is not compiled in.
func ArmFail(spec string) error {
	points, err := parseSpec("failpoint", spec, FailNames)
	if err != nil {
		return err
	}
	failSet.arm(points)
	return nil
}

// DisarmFail disarms every failpoint and forgets their hits (tests).
func DisarmFail() { failSet.arm(nil) }

// FailArmed reports whether failpoint p is armed (whatever its hit): a
// failpoint that needs something set up first (FailRefuse's queue) asks.
func FailArmed(p string) bool { return failSet.has(p) }

// Fail returns an error wrapping ErrInjected when failpoint p is armed and
// this is its armed hit; otherwise nil.
func Fail(p string) error {
	n, fire := failSet.hit(p)
	if !fire {
		return nil
	}
	fmt.Fprintf(os.Stderr, "FAILPOINT %s hit %d\n", p, n)
	return fmt.Errorf("%w at %s", ErrInjected, p)
}

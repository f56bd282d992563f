package killpoint

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
)

// Failpoints are named points that return an injected error instead of
// killing the process (like etcd's gofail): the write after them is made to
// fail while the process lives on. Armed through the environment:
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
)

// FailNames lists every failpoint compiled into system/.
var FailNames = []string{FailAnniversaryOutbox, FailClaimResponse, FailResultUpdate, FailFinishResponse}

// FailEnvVar is the environment variable that arms failpoints.
const FailEnvVar = "OUTBOXCHAOS_FAILPOINT"

// ErrInjected wraps every injected failure.
var ErrInjected = errors.New("injected failure")

var (
	failMu   sync.Mutex
	failNth  = map[string]int{}
	failHits = map[string]int{}
)

func init() {
	if v := os.Getenv(FailEnvVar); v != "" {
		if err := ArmFail(v); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", FailEnvVar, err)
			os.Exit(2)
		}
	}
}

// ArmFail arms a comma-separated list of "name" or "name:N".
func ArmFail(spec string) error {
	failMu.Lock()
	defer failMu.Unlock()
	for _, part := range strings.Split(spec, ",") {
		n, count := strings.TrimSpace(part), 1
		if i := strings.LastIndexByte(n, ':'); i >= 0 {
			c, err := strconv.Atoi(n[i+1:])
			if err != nil || c < 1 {
				return fmt.Errorf("failpoint %q: hit number must be a positive integer", part)
			}
			n, count = n[:i], c
		}
		known := false
		for _, k := range FailNames {
			known = known || k == n
		}
		if !known {
			return fmt.Errorf("unknown failpoint %q (known: %s)", n, strings.Join(FailNames, ", "))
		}
		failNth[n] = count
	}
	return nil
}

// DisarmFail disarms every failpoint and forgets their hits (tests).
func DisarmFail() {
	failMu.Lock()
	defer failMu.Unlock()
	failNth, failHits = map[string]int{}, map[string]int{}
}

// Fail returns an error wrapping ErrInjected when failpoint p is armed and
// this is its armed hit; otherwise nil.
func Fail(p string) error {
	failMu.Lock()
	defer failMu.Unlock()
	nth, ok := failNth[p]
	if !ok {
		return nil
	}
	failHits[p]++
	if failHits[p] != nth {
		return nil
	}
	fmt.Fprintf(os.Stderr, "FAILPOINT %s hit %d\n", p, failHits[p])
	return fmt.Errorf("%w at %s", ErrInjected, p)
}

// Package killpoint owns the named points at which a process can be made to
// die as if the kernel killed it (SIGKILL: no deferred code, sockets dropped).
//
// The points are compiled into system/ at each boundary of the SPEC §6 failure
// table. They cost one atomic load when nothing is armed. A harness arms one
// for a child process through the environment:
//
//	OUTBOXCHAOS_KILLPOINT=relay.after-claim      # first hit
//	OUTBOXCHAOS_KILLPOINT=worker.after-claim:3   # third hit
//
// Just before dying the process writes "KILLPOINT <name> hit <n>" to stderr,
// so the harness can tell that the fault fired.
package killpoint

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
)

// The named kill-points. Keep in step with the failure table (SPEC §6).
const (
	JobBeforeCommit     = "job.before-commit"
	RelayAfterClaim     = "relay.after-claim"
	RelayAfterPublish   = "relay.after-publish"
	RelayAfterConfirm   = "relay.after-confirm"
	WorkerBeforeClaim   = "worker.before-claim"
	WorkerAfterClaim    = "worker.after-claim"
	WorkerAfterSend     = "worker.after-send"
	WorkerAfterResult   = "worker.after-result"
	CleanupBeforeUpdate = "cleanup.before-update"
)

// Names lists every kill-point compiled into system/.
var Names = []string{
	JobBeforeCommit, RelayAfterClaim, RelayAfterPublish, RelayAfterConfirm,
	WorkerBeforeClaim, WorkerAfterClaim, WorkerAfterSend, WorkerAfterResult,
	CleanupBeforeUpdate,
}

// EnvVar is the environment variable that arms a kill-point.
const EnvVar = "OUTBOXCHAOS_KILLPOINT"

var (
	armed atomic.Bool
	mu    sync.Mutex
	name  string
	nth   int
	hits  int
	die   = func() { _ = syscall.Kill(os.Getpid(), syscall.SIGKILL); select {} }
)

func init() {
	if v := os.Getenv(EnvVar); v != "" {
		if err := Arm(v); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", EnvVar, err)
			os.Exit(2)
		}
	}
}

// Arm arms the point named by spec ("name" or "name:N"). It fails for a name
// that is not compiled in.
func Arm(spec string) error {
	n, count := spec, 1
	if i := strings.LastIndexByte(spec, ':'); i >= 0 {
		c, err := strconv.Atoi(spec[i+1:])
		if err != nil || c < 1 {
			return fmt.Errorf("kill-point %q: hit number must be a positive integer", spec)
		}
		n, count = spec[:i], c
	}
	if !Known(n) {
		return fmt.Errorf("unknown kill-point %q (known: %s)", n, strings.Join(Names, ", "))
	}
	mu.Lock()
	name, nth, hits = n, count, 0
	mu.Unlock()
	armed.Store(true)
	return nil
}

// Known reports whether n names a compiled-in kill-point.
func Known(n string) bool {
	for _, k := range Names {
		if k == n {
			return true
		}
	}
	return false
}

// Hit marks that execution reached point p. If p is armed and this is the
// armed hit, the process dies here.
func Hit(p string) {
	if !armed.Load() {
		return
	}
	mu.Lock()
	if p != name {
		mu.Unlock()
		return
	}
	hits++
	n := hits
	fire := hits == nth
	mu.Unlock()
	if fire {
		fmt.Fprintf(os.Stderr, "KILLPOINT %s hit %d\n", p, n)
		die()
	}
}

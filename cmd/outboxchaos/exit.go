package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Exit codes, one per kind of answer (documented in the package doc and
// `outboxchaos help`).
const (
	exitPass      = 0 // the contract held, or the command did its job
	exitViolated  = 1 // a verdict said the contract was broken
	exitUsage     = 2 // bad command line or configuration
	exitNotJudged = 3 // the harness or its infrastructure failed, or a signal ended the run
	// exitBrokenPipe is what a shell reports for a process a closed pipe
	// killed (128 + SIGPIPE): the reader of stdout or stderr went away
	// (`… | head`), and the command stopped, cleaned up and said nothing.
	exitBrokenPipe = 128 + int(syscall.SIGPIPE)
)

// usageError marks errors that exit 2.
type usageError struct{ error }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// errVerdictFailed: a verdict said FAIL (exit 1). errNotJudged: a run could
// not be judged (exit 3). Wrap them to add what failed.
var (
	errVerdictFailed = errors.New("verdict: FAIL")
	errNotJudged     = errors.New("verdict: ERROR (not judged)")
)

// signalError is the cause of a context a signal cancelled.
type signalError struct{ sig os.Signal }

func (e signalError) Error() string {
	name := map[os.Signal]string{os.Interrupt: "SIGINT", syscall.SIGTERM: "SIGTERM", syscall.SIGPIPE: "SIGPIPE"}[e.sig]
	if name == "" {
		name = e.sig.String()
	}
	return "signal " + name
}

// interrupted reports whether a signal ended ctx, and which.
func interrupted(ctx context.Context) (signalError, bool) {
	var se signalError
	ok := errors.As(context.Cause(ctx), &se)
	return se, ok
}

// signalContext is cancelled, with a signalError cause, by SIGINT or
// SIGTERM. A second one exits at once, without clean-up. cancel ends it
// with a cause of the caller's (a closed stdout).
func signalContext(parent context.Context, warn func(string)) (ctx context.Context, cancel context.CancelCauseFunc, stop func()) {
	ctx, cancel = context.WithCancelCause(parent)
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		first := true
		for {
			select {
			case sig := <-ch:
				if first {
					first = false
					warn(fmt.Sprintf("%s: stopping and cleaning up (again to exit at once, leaving schema and queues behind)", signalError{sig}))
					cancel(signalError{sig})
					continue
				}
				warn(fmt.Sprintf("%s again: exiting without clean-up", signalError{sig}))
				os.Exit(exitNotJudged)
			case <-done:
				return
			}
		}
	}()
	return ctx, cancel, func() {
		signal.Stop(ch)
		close(done)
		cancel(nil)
	}
}

// pipeWatch passes writes to w; the first that fails because the reader
// went away (`demo | head`) ends the command's context as SIGPIPE would,
// so it stops and drops its schema and queues. SIGPIPE itself is ignored
// (main): caught, it would also come from every socket write to a peer
// that closed (a link the harness cut), and stop a pod that must go on.
type pipeWatch struct {
	w      io.Writer
	cancel context.CancelCauseFunc
}

func (p pipeWatch) Write(b []byte) (int, error) {
	n, err := p.w.Write(b)
	if errors.Is(err, syscall.EPIPE) {
		p.cancel(signalError{syscall.SIGPIPE})
	}
	return n, err
}

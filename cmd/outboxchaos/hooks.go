package main

import (
	"fmt"
	"io"

	"github.com/outboxchaos/outboxchaos/system/app"
	"github.com/outboxchaos/outboxchaos/system/canary"
	"github.com/outboxchaos/outboxchaos/system/crashpoint"
	"github.com/outboxchaos/outboxchaos/system/killpoint"
)

// armHooks arms what the process was started with: the kill-points of
// OUTBOXCHAOS_KILLPOINT, the failpoints of OUTBOXCHAOS_FAILPOINT, the crash
// point and trace of OUTBOXCHAOS_CRASHPOINT(_TRACE) and the
// canary of OUTBOXCHAOS_BUG, after checking OUTBOXCHAOS_LOG_FORMAT and
// OUTBOXCHAOS_LOG_LEVEL. main calls it once, before any command builds a
// component (components choose their canary variant when they are built).
// A bad spec is an error naming the variable and the valid names.
func armHooks(stderr io.Writer) error {
	if err := app.CheckLogEnv(); err != nil {
		return err
	}
	if err := killpoint.ArmFromEnv(); err != nil {
		return fmt.Errorf("arm fault hooks: %w", err)
	}
	if err := crashpoint.ArmFromEnv(); err != nil {
		return fmt.Errorf("arm crash points: %w", err)
	}
	bug, err := canary.FromEnv()
	if err != nil {
		return fmt.Errorf("arm canary: %w", err)
	}
	if err := canary.Arm(bug); err != nil {
		return fmt.Errorf("arm canary: %w", err)
	}
	if bug != "" {
		fmt.Fprintf(stderr, "WARNING: canary bug %q is enabled: this process is deliberately broken\n", bug)
	}
	return nil
}

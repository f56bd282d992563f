package main

import (
	"context"
	"fmt"
	"os"

	"github.com/outboxchaos/outboxchaos/scenarios"
	"github.com/outboxchaos/outboxchaos/system/config"
	"github.com/outboxchaos/outboxchaos/system/preflight"
)

// harnessOptions are the run options of a harness command: the service
// URLs from the environment, validated as a pipeline command's are (a bad
// OUTBOXCHAOS_* value is a usage error, never silently a default), and
// this binary for the pods.
func harnessOptions() (scenarios.Options, error) {
	c := config.Default()
	if err := c.FromEnv(); err != nil {
		return scenarios.Options{}, usageError{err}
	}
	if err := c.Validate(); err != nil {
		return scenarios.Options{}, usageError{fmt.Errorf("invalid configuration: %w", err)}
	}
	bin, err := os.Executable()
	if err != nil {
		return scenarios.Options{}, fmt.Errorf("find own binary for the pods: %w", err)
	}
	o := scenarios.DefaultOptions()
	o.PGURL, o.AMQPURL, o.Bin = c.PGURL, c.AMQPURL, bin
	return o, nil
}

// preflightServices checks, once before any run, that Postgres and
// RabbitMQ answer and accept the login: a run against a service that is
// down is not judged (exit 3), saying which service and why.
func preflightServices(ctx context.Context, o scenarios.Options) error {
	if err := preflight.Services(ctx, o.PGURL, o.AMQPURL); err != nil {
		return fmt.Errorf("%w: preflight: %w", errNotJudged, err)
	}
	return nil
}

//go:build !pod

package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/outboxchaos/outboxchaos/scenarios"
	"github.com/outboxchaos/outboxchaos/system/config"
	"github.com/outboxchaos/outboxchaos/system/sandbox"
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
// RabbitMQ answer and accept the login (ciOutput.preflight, for a command
// without machine-readable output).
func preflightServices(ctx context.Context, o scenarios.Options) error {
	return ciOutput{}.preflight(ctx, o)
}

// freshSchemasFlag registers --fresh-schemas on a harness command that
// runs many scenarios.
func freshSchemasFlag(fs *flag.FlagSet) *bool {
	return fs.Bool("fresh-schemas", false, "every run creates a schema of its own and drops it, instead of taking a kept, migrated one from the command's pool (emptied and checked after each run; the runs of our pipeline without a canary take them)")
}

// keepSchemas gives o a pool of kept schemas, unless fresh, and returns
// what closes it: the pool's schemas are dropped when the command ends,
// and a harness killed before that leaves them to the next pool's sweep.
func keepSchemas(o *scenarios.Options, fresh bool, stderr io.Writer) (closePool func()) {
	if fresh {
		return func() {}
	}
	o.Sandboxes = sandbox.NewPool(o.PGURL, o.AMQPURL, 0)
	return func() {
		if err := o.Sandboxes.Close(); err != nil {
			fmt.Fprintf(stderr, "outboxchaos: drop the kept schemas: %v\n", err)
		}
	}
}

// printPool says how the runs got their schemas, if from a pool.
func printPool(w io.Writer, p *sandbox.Pool) {
	if p == nil {
		return
	}
	st := p.Stats()
	fmt.Fprintf(w, "schemas: %d runs took a kept one, %d created and migrated, %d dropped after a run", st.Reused, st.Created, st.Dropped)
	if st.WhyDropped != "" {
		fmt.Fprintf(w, " (the last: %s)", st.WhyDropped)
	}
	if st.Swept > 0 {
		fmt.Fprintf(w, "; %d left by killed runs swept", st.Swept)
	}
	fmt.Fprintln(w)
}

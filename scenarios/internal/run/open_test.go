package run

import (
	"context"
	"strings"
	"testing"

	"github.com/outboxchaos/outboxchaos/system/config"
	"github.com/outboxchaos/outboxchaos/system/testenv"
)

// A driver's Tune cannot move the pods off the run's own schema, queues,
// links and clock: the world sets those after it.
func TestOpenWiringWinsOverTune(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e, err := Open(ctx, "open-tune", Options{
		PGURL: testenv.PGURL(), AMQPURL: testenv.AMQPURL(), Seed: 1,
		Tune: func(c *config.Config) {
			*c = config.Default()
			c.BatchSize = 7
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	c := e.Cfg
	if c.BatchSize != 7 {
		t.Fatalf("Tune's setting lost: batch size %d", c.BatchSize)
	}
	if c.Prefix != e.SB.Prefix || !strings.Contains(c.PGURL, e.PG.Addr()) || !strings.Contains(c.VendorURL, e.VendorLink.Addr()) ||
		c.Clock == config.Default().Clock || c.AlertURL == "" {
		t.Fatalf("the run's wiring was overridden: prefix %q (want %q), pg %q, vendor %q, clock %q, alert %q",
			c.Prefix, e.SB.Prefix, c.PGURL, c.VendorURL, c.Clock, c.AlertURL)
	}
}

package config_test

import (
	"flag"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/outboxchaos/outboxchaos/system/config"
)

func TestDefault_IsValidAndMatchesSpec(t *testing.T) {
	t.Parallel()
	c := config.Default()
	if err := c.Validate(); err != nil {
		t.Fatalf("default config invalid: %v", err)
	}
	if c.BatchSize != 50 || c.Lease != 15*time.Minute || c.RelayInterval != 5*time.Minute ||
		c.ConfirmTimeout != 5*time.Second || c.AlertAttempt != 5 || c.RetryMax != 3 || c.InListenerRetries != 2 ||
		c.InListenerDelay != time.Second || c.RetryTTL != 10*time.Minute || c.SendingTimeout != 10*time.Minute ||
		c.AdPublishCutoff.String() != "20:40" || c.AdResumeAt.String() != "08:00" ||
		c.AdSendFrom.String() != "08:00" || c.AdSendUntil.String() != "20:50" ||
		c.RelayFrom.String() != "08:00" || c.RelayUntil.String() != "20:55" || c.Production {
		t.Fatalf("defaults differ from design §3–§5: %+v", c)
	}
	if got := c.Backoff.String(); got != "1m0s,2m0s,4m0s,8m0s,16m0s,30m0s" {
		t.Fatalf("backoff %s", got)
	}
	// Re-sends are off unless asked for (docs/reconcile.md), and the
	// acceptance window is far beyond the vendor timeout.
	if c.ReconcileResend || c.VendorAcceptWindow <= c.VendorTimeout || c.ReconcileMaxTries < 2 {
		t.Fatalf("reconciliation defaults: %+v", c)
	}
}

func TestValidate_RejectsBadValuesNamingTheField(t *testing.T) {
	t.Parallel()
	for field, mutate := range map[string]func(*config.Config){
		"lease":                              func(c *config.Config) { c.Lease = 0 },
		"relay-interval":                     func(c *config.Config) { c.RelayInterval = -time.Second },
		"confirm-timeout":                    func(c *config.Config) { c.ConfirmTimeout = 0 },
		"retry-ttl":                          func(c *config.Config) { c.RetryTTL = 0 },
		"vendor-timeout":                     func(c *config.Config) { c.VendorTimeout = 0 },
		"sending-timeout":                    func(c *config.Config) { c.SendingTimeout = 0 },
		"cleanup-interval":                   func(c *config.Config) { c.CleanupInterval = 0 },
		"cleanup-lock-ttl":                   func(c *config.Config) { c.CleanupLockTTL = 0 },
		"alert-timeout":                      func(c *config.Config) { c.AlertTimeout = 0 },
		"in-listener-delay":                  func(c *config.Config) { c.InListenerDelay = -1 },
		"batch-size":                         func(c *config.Config) { c.BatchSize = 0 },
		"relay-drain":                        func(c *config.Config) { c.RelayDrain, c.BatchSize = true, config.MaxDrainBatch+1 },
		"backoff":                            func(c *config.Config) { c.Backoff = nil },
		"backoff step":                       func(c *config.Config) { c.Backoff = config.Durations{time.Minute, 0} },
		"alert-attempt":                      func(c *config.Config) { c.AlertAttempt = 0 },
		"delivery-limit":                     func(c *config.Config) { c.DeliveryLimit = 0 },
		"retry-max":                          func(c *config.Config) { c.RetryMax = -1 },
		"in-listener-retries":                func(c *config.Config) { c.InListenerRetries = -1 },
		"prefix":                             func(c *config.Config) { c.Prefix = "a b" },
		"pg-url":                             func(c *config.Config) { c.PGURL = "" },
		"amqp-url":                           func(c *config.Config) { c.AMQPURL = "" },
		"clock setting":                      func(c *config.Config) { c.Clock = "yesterday" },
		"vendor-accept-window":               func(c *config.Config) { c.VendorAcceptWindow = 0 },
		"report-final-after":                 func(c *config.Config) { c.ReportFinalAfter = 0 },
		"clock-margin":                       func(c *config.Config) { c.ClockMargin = -time.Second },
		"reconcile-interval":                 func(c *config.Config) { c.ReconcileInterval = 0 },
		"reconcile-lock-ttl":                 func(c *config.Config) { c.ReconcileLockTTL = 0 },
		"reconcile-retry":                    func(c *config.Config) { c.ReconcileRetry = 0 },
		"reconcile-max-tries":                func(c *config.Config) { c.ReconcileMaxTries = 1 },
		"reconcile-batch":                    func(c *config.Config) { c.ReconcileBatch = 0 },
		"reconcile-max-resends":              func(c *config.Config) { c.ReconcileMaxResends = -1 },
		"delivery-slack":                     func(c *config.Config) { c.DeliverySlack = 0 },
		"queue-max-length":                   func(c *config.Config) { c.QueueMaxLength = -1 },
		"must be longer than vendor-timeout": func(c *config.Config) { c.SendingTimeout = c.VendorTimeout / 2 },
		"relay-drain-depth":                  func(c *config.Config) { c.RelayDrainDepth = 0 },
		"relay-drain-claimers":               func(c *config.Config) { c.RelayDrainClaimers = config.MaxDrainClaimers + 1 },
		"amqp-heartbeat":                     func(c *config.Config) { c.AMQPHeartbeat = 500 * time.Millisecond },
		"amqp-dial-timeout":                  func(c *config.Config) { c.AMQPDialTimeout = 0 },
		"pg-connect-timeout":                 func(c *config.Config) { c.PGConnectTimeout = 0 },
	} {
		c := config.Default()
		mutate(&c)
		err := c.Validate()
		if err == nil {
			t.Errorf("%s: bad value accepted", field)
			continue
		}
		if !strings.Contains(err.Error(), field) {
			t.Errorf("%s: error %q does not name the field", field, err)
		}
	}
}

// relay-drain-depth is 1..MaxDrainDepth; the error says the bounds.
func TestValidate_DrainDepthBounds(t *testing.T) {
	t.Parallel()
	for depth, ok := range map[int]bool{-1: false, 0: false, 1: true, 3: true, config.MaxDrainDepth: true, config.MaxDrainDepth + 1: false} {
		c := config.Default()
		c.RelayDrainDepth = depth
		err := c.Validate()
		if (err == nil) != ok {
			t.Errorf("relay-drain-depth %d: error %v, want valid %v", depth, err, ok)
		}
		if err != nil && !strings.Contains(err.Error(), "relay-drain-depth must be 1..32, got") {
			t.Errorf("relay-drain-depth %d: error %q does not say the bounds", depth, err)
		}
	}
}

func TestFromLookup_ParseErrorsNameTheVariable(t *testing.T) {
	t.Parallel()
	for name, val := range map[string]string{
		"OUTBOXCHAOS_LEASE":             "abc",
		"OUTBOXCHAOS_BATCH_SIZE":        "many",
		"OUTBOXCHAOS_PRODUCTION":        "perhaps",
		"OUTBOXCHAOS_AD_PUBLISH_CUTOFF": "25:00",
		"OUTBOXCHAOS_BACKOFF":           "1m,x",
	} {
		c := config.Default()
		err := c.FromLookup(func(k string) (string, bool) {
			if k == name {
				return val, true
			}
			return "", false
		})
		if err == nil {
			t.Errorf("%s=%s accepted", name, val)
			continue
		}
		if !strings.Contains(err.Error(), name) {
			t.Errorf("%s=%s: error %q does not name the variable", name, val, err)
		}
	}
}

func TestFromLookup_OverridesAndEnvRoundTrip(t *testing.T) {
	t.Parallel()
	env := map[string]string{
		"OUTBOXCHAOS_LEASE":             "2s",
		"OUTBOXCHAOS_BATCH_SIZE":        "7",
		"OUTBOXCHAOS_PRODUCTION":        "true",
		"OUTBOXCHAOS_AD_PUBLISH_CUTOFF": "19:05",
		"OUTBOXCHAOS_BACKOFF":           "1s, 2s",
		"OUTBOXCHAOS_PREFIX":            "p1",
	}
	c := config.Default()
	if err := c.FromLookup(func(k string) (string, bool) { v, ok := env[k]; return v, ok }); err != nil {
		t.Fatal(err)
	}
	if c.Lease != 2*time.Second || c.BatchSize != 7 || !c.Production || c.AdPublishCutoff != (config.TimeOfDay{H: 19, M: 5}) ||
		len(c.Backoff) != 2 || c.Backoff[1] != 2*time.Second || c.Prefix != "p1" {
		t.Fatalf("overrides not applied: %+v", c)
	}
	// Env() is what a child process receives: reading it back gives the
	// same configuration.
	kv := map[string]string{}
	for _, e := range c.Env() {
		k, v, _ := strings.Cut(e, "=")
		kv[k] = v
	}
	d := config.Default()
	if err := d.FromLookup(func(k string) (string, bool) { v, ok := kv[k]; return v, ok }); err != nil {
		t.Fatal(err)
	}
	if d.Lease != c.Lease || d.BatchSize != c.BatchSize || d.Production != c.Production ||
		d.AdPublishCutoff != c.AdPublishCutoff || d.Backoff.String() != c.Backoff.String() || d.Prefix != c.Prefix {
		t.Fatalf("Env round trip: got %+v, want %+v", d, c)
	}
}

func TestBind_FlagsOverrideAndBadValueNamesFlag(t *testing.T) {
	t.Parallel()
	c := config.Default()
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c.Bind(fs)
	if err := fs.Parse([]string{"--lease=3s", "--batch-size=9", "--production"}); err != nil {
		t.Fatal(err)
	}
	if c.Lease != 3*time.Second || c.BatchSize != 9 || !c.Production {
		t.Fatalf("flags not applied: %+v", c)
	}
	c2 := config.Default()
	fs2 := flag.NewFlagSet("x", flag.ContinueOnError)
	fs2.SetOutput(io.Discard)
	c2.Bind(fs2)
	err := fs2.Parse([]string{"--lease=abc"})
	if err == nil || !strings.Contains(err.Error(), "lease") {
		t.Fatalf("bad --lease: got %v", err)
	}
}

func TestBackoffFor_StepsThenLastRepeats(t *testing.T) {
	t.Parallel()
	c := config.Default()
	want := []time.Duration{time.Minute, time.Minute, 2 * time.Minute, 4 * time.Minute, 8 * time.Minute, 16 * time.Minute, 30 * time.Minute, 30 * time.Minute}
	for attempt := 0; attempt < len(want); attempt++ {
		if got := c.BackoffFor(attempt); got != want[attempt] {
			t.Errorf("BackoffFor(%d) = %s, want %s", attempt, got, want[attempt])
		}
	}
	if got := c.BackoffFor(99); got != 30*time.Minute {
		t.Errorf("BackoffFor(99) = %s", got)
	}
}

func TestTimeOfDay_Set(t *testing.T) {
	t.Parallel()
	var tod config.TimeOfDay
	if err := tod.Set("08:05"); err != nil || tod.String() != "08:05" || tod.Minutes() != 485 {
		t.Fatalf("08:05: %v %s", err, tod)
	}
	for _, bad := range []string{"24:00", "8", "ab:cd", "12:60", "-1:00"} {
		if err := tod.Set(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// Package config owns every tunable of the pipeline: connection addresses,
// queue-name prefix, every duration (relay interval, lease, batch size,
// confirm timeout, backoff steps, retry TTL, SENDING timeout, cleanup
// interval) and every time-of-day rule. Defaults are the production numbers
// of design §3–§5; scenarios compress them through the same fields.
//
// Values come from Default, then OUTBOXCHAOS_* environment variables
// (FromEnv), then command-line flags (Bind). Validate reports the first bad
// value with its name.
package config

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/outboxchaos/outboxchaos/system/clock"
)

// TimeOfDay is an hh:mm wall-clock time in Asia/Seoul.
type TimeOfDay struct{ H, M int }

// String formats t as hh:mm.
func (t TimeOfDay) String() string { return fmt.Sprintf("%02d:%02d", t.H, t.M) }

// Set parses hh:mm (flag.Value).
func (t *TimeOfDay) Set(s string) error {
	var h, m int
	if _, err := fmt.Sscanf(s, "%d:%d", &h, &m); err != nil || h < 0 || h > 23 || m < 0 || m > 59 {
		return fmt.Errorf("time of day %q: want hh:mm", s)
	}
	t.H, t.M = h, m
	return nil
}

// On returns the instant of t on the Seoul calendar day of day.
func (t TimeOfDay) On(day time.Time) time.Time { return clock.At(day, t.H, t.M) }

// Minutes returns minutes since midnight.
func (t TimeOfDay) Minutes() int { return t.H*60 + t.M }

// Durations is a comma-separated list of durations (flag.Value).
type Durations []time.Duration

// String formats the list.
func (d Durations) String() string {
	s := make([]string, len(d))
	for i, v := range d {
		s[i] = v.String()
	}
	return strings.Join(s, ",")
}

// Set parses "1m,2m,4m".
func (d *Durations) Set(s string) error {
	var out Durations
	for _, part := range strings.Split(s, ",") {
		v, err := time.ParseDuration(strings.TrimSpace(part))
		if err != nil {
			return fmt.Errorf("duration list %q: %w", s, err)
		}
		out = append(out, v)
	}
	*d = out
	return nil
}

// Config is the whole configuration of one pipeline process.
type Config struct {
	PGURL     string // Postgres connection URL (may carry search_path)
	AMQPURL   string // RabbitMQ URL, or several separated by commas (a cluster's nodes)
	VendorURL string // SMS vendor base URL
	AlertURL  string // Slack-compatible incoming webhook; empty: log only
	Prefix    string // prefix of every exchange and queue name
	Instance  string // name of this process in claims and logs
	Clock     string // shared clock setting (see clock.Parse)

	Production bool // false: only registered numbers may receive messages

	// Relay (design §3, §4).
	RelayInterval   time.Duration
	RelayFrom       TimeOfDay // relay runs between RelayFrom and RelayUntil
	RelayUntil      TimeOfDay
	BatchSize       int
	RelayDrain      bool // after a full batch, keep going back to back (Relay.Drain)
	RelayDrainDepth int  // Relay.Drain: batches published and awaiting their confirms at once
	Lease           time.Duration
	ConfirmTimeout  time.Duration
	// AMQPHeartbeat is the broker connections' heartbeat: a broker that
	// sends nothing for about three of them counts as gone.
	AMQPHeartbeat   time.Duration
	AMQPDialTimeout time.Duration // bounds a broker dial, handshake included
	// PGConnectTimeout bounds a Postgres connection's set-up (dial, TLS,
	// authentication) and a new pool's first answer.
	PGConnectTimeout time.Duration
	Backoff          Durations // nth failure waits Backoff[n-1]; the last step repeats
	AlertAttempt     int       // the attempt that raises an alert
	AdPublishCutoff  TimeOfDay // ads are not published at or after this
	AdResumeAt       TimeOfDay // ... and are postponed to this time next day

	// Relay.Drain: goroutines claiming batches at once (SKIP LOCKED keeps
	// their rows apart).
	RelayDrainClaimers int

	// Worker and inbox (design §5).
	AdSendFrom        TimeOfDay // advertising hours at the worker
	AdSendUntil       TimeOfDay
	DeliveryLimit     int // deliveries after which the worker parks a message itself
	DeliverySlack     int // further returns RabbitMQ allows before it dead-letters by itself
	QueueMaxLength    int // main queue x-max-length (0: unbounded); past it publishes are nacked
	InListenerRetries int
	InListenerDelay   time.Duration
	RetryTTL          time.Duration
	RetryMax          int
	VendorTimeout     time.Duration
	VendorAccount     string
	VendorPassword    string
	SenderNumber      string

	// Cleanup.
	SendingTimeout  time.Duration
	CleanupInterval time.Duration
	CleanupLockTTL  time.Duration

	// Reconciliation (docs/reconcile.md): the vendor's acceptance
	// deadline and report finality, and the reconciler's pace.
	VendorAcceptWindow  time.Duration // a send carries expireat = claim time + this; the vendor drops it after
	ReportFinalAfter    time.Duration // the vendor's report of a request is final this long after its expireat
	ClockMargin         time.Duration // allowed clock difference between us and the vendor
	ReconcileInterval   time.Duration
	ReconcileLockTTL    time.Duration
	ReconcileRetry      time.Duration // wait after a lookup that did not settle the row
	ReconcileMaxTries   int           // lookups before the row is left to an operator (with an alert)
	ReconcileBatch      int           // rows looked at per run
	ReconcileResend     bool          // re-send what the vendor definitively never received
	ReconcileMaxResends int           // re-sends per message before it is settled FAILED

	AlertTimeout time.Duration
}

// Default returns the production configuration of design §3–§5, pointed at the
// local services.
func Default() Config {
	host, _ := os.Hostname()
	return Config{
		PGURL:         "postgres://postgres@127.0.0.1:5432/test?sslmode=disable",
		AMQPURL:       "amqp://guest:guest@127.0.0.1:5672/",
		VendorURL:     "http://127.0.0.1:8089",
		Prefix:        "outboxchaos",
		Instance:      fmt.Sprintf("%s-%d", host, os.Getpid()),
		RelayInterval: 5 * time.Minute,
		RelayFrom:     TimeOfDay{8, 0},
		RelayUntil:    TimeOfDay{20, 55},
		BatchSize:     50,
		// Six batches (300 publishes) in flight: make bench measured 0.68–0.79
		// of the raw 50-in-flight publish rate at 3 and 0.85–0.97 at 6 to 12
		// on an idle machine; the broker confirms a longer window faster.
		RelayDrainDepth:   6,
		Lease:             15 * time.Minute,
		ConfirmTimeout:    5 * time.Second,
		AMQPHeartbeat:     5 * time.Second,
		AMQPDialTimeout:   5 * time.Second,
		PGConnectTimeout:  5 * time.Second,
		Backoff:           Durations{time.Minute, 2 * time.Minute, 4 * time.Minute, 8 * time.Minute, 16 * time.Minute, 30 * time.Minute},
		AlertAttempt:      5,
		AdPublishCutoff:   TimeOfDay{20, 40},
		AdResumeAt:        TimeOfDay{8, 0},
		AdSendFrom:        TimeOfDay{8, 0},
		AdSendUntil:       TimeOfDay{20, 50},
		DeliveryLimit:     20,
		DeliverySlack:     3,
		InListenerRetries: 2,
		InListenerDelay:   time.Second,
		RetryTTL:          10 * time.Minute,
		RetryMax:          3,
		VendorTimeout:     10 * time.Second,
		VendorAccount:     "outboxchaos",
		VendorPassword:    "secret",
		SenderNumber:      "0212345678",
		SendingTimeout:    10 * time.Minute,
		CleanupInterval:   5 * time.Minute,
		CleanupLockTTL:    4 * time.Minute,
		AlertTimeout:      2 * time.Second,

		RelayDrainClaimers: 2,

		VendorAcceptWindow:  2 * time.Minute,
		ReportFinalAfter:    5 * time.Minute,
		ClockMargin:         time.Minute,
		ReconcileInterval:   5 * time.Minute,
		ReconcileLockTTL:    4 * time.Minute,
		ReconcileRetry:      5 * time.Minute,
		ReconcileMaxTries:   12,
		ReconcileBatch:      50,
		ReconcileMaxResends: 1,
	}
}

// Groups of settings, by the component that reads them, in the order
// help shows them.
const (
	GroupServices   = "services"
	GroupClock      = "clock and mode"
	GroupRelay      = "relay"
	GroupWorker     = "worker"
	GroupVendor     = "vendor"
	GroupCleanup    = "cleanup"
	GroupReconciler = "reconciler"
)

// Groups lists the groups in help's order.
var Groups = []string{GroupServices, GroupClock, GroupRelay, GroupWorker, GroupVendor, GroupCleanup, GroupReconciler}

// field describes one setting for both the environment and flags: the
// group of the component that reads it, its name, its help and its value.
type field struct {
	group, name, usage string
	val                flag.Value
}

// Setting is one setting's facts: its flag name, its group and its help;
// for an integer setting, its valid range (Max 0: none above).
type Setting struct {
	Name, Group, Usage string
	Integer            bool
	Min, Max           int
}

// How a duration setting runs.
const (
	// OnTimer: the pipeline waits it out on a real timer (an interval, a
	// timeout, a delay): a simulator that compresses time divides it.
	OnTimer = "timer"
	// OnClock: the pipeline compares it with its clock (a lease, an age,
	// a window): a virtual clock moves it, and it keeps its value.
	OnClock = "clock"
)

// DurationSetting is one duration setting of a Config: its name and
// group, how it runs (OnTimer, OnClock), and its value in that Config.
type DurationSetting struct {
	Name, Group, Runs string
	Value             *time.Duration
}

// DurationSettings lists c's duration settings, in the order of the
// configuration; the backoff steps (Durations) run on the clock and are
// not among them.
func (c *Config) DurationSettings() []DurationSetting {
	var out []DurationSetting
	for _, f := range c.fields() {
		switch v := f.val.(type) {
		case *durVal:
			out = append(out, DurationSetting{Name: f.name, Group: f.group, Runs: OnTimer, Value: (*time.Duration)(v)})
		case *clockDur:
			out = append(out, DurationSetting{Name: f.name, Group: f.group, Runs: OnClock, Value: (*time.Duration)(v)})
		}
	}
	return out
}

// Settings lists every setting in its group, in the order of Groups and
// then of the configuration.
func Settings() []Setting {
	var c Config
	fs := c.fields()
	var out []Setting
	for _, g := range Groups {
		for _, f := range fs {
			if f.group == g {
				st := Setting{Name: f.name, Group: f.group, Usage: f.usage}
				if iv, ok := f.val.(*intVal); ok {
					st.Integer, st.Min, st.Max = true, iv.min, iv.max
				}
				out = append(out, st)
			}
		}
	}
	return out
}

func (c *Config) fields() []field {
	return []field{
		{GroupServices, "pg-url", "Postgres URL", (*strVal)(&c.PGURL)},
		{GroupServices, "amqp-url", "RabbitMQ URL, or several separated by commas (a cluster's nodes: a connection goes to one that answers)", (*strVal)(&c.AMQPURL)},
		{GroupVendor, "vendor-url", "SMS vendor base URL", (*strVal)(&c.VendorURL)},
		{GroupServices, "alert-url", "Slack-compatible alert webhook URL (empty: log only)", (*strVal)(&c.AlertURL)},
		{GroupServices, "prefix", "prefix of every exchange and queue name", (*strVal)(&c.Prefix)},
		{GroupServices, "instance", "instance name used in claims and logs", (*strVal)(&c.Instance)},
		{GroupClock, "clock", "shared clock setting START[@ANCHOR_NANOS][*RATE] or 'real'", (*strVal)(&c.Clock)},
		{GroupClock, "production", "production mode (false: only registered numbers)", (*boolVal)(&c.Production)},
		{GroupRelay, "relay-interval", "relay run interval", (*durVal)(&c.RelayInterval)},
		{GroupRelay, "relay-from", "relay window start hh:mm", &c.RelayFrom},
		{GroupRelay, "relay-until", "relay window end hh:mm", &c.RelayUntil},
		{GroupRelay, "batch-size", "rows claimed per relay run", &intVal{v: &c.BatchSize, min: 1, max: 10000}},
		{GroupRelay, "relay-drain", "after a full batch, drain the backlog with overlapped batches instead of waiting for the next interval", (*boolVal)(&c.RelayDrain)},
		{GroupRelay, "relay-drain-depth", "a draining relay's batches published and awaiting their confirms at once", &intVal{v: &c.RelayDrainDepth, min: 1, max: MaxDrainDepth}},
		{GroupRelay, "relay-drain-claimers", "a draining relay's batches claimed at once, each by its own SKIP LOCKED claim", &intVal{v: &c.RelayDrainClaimers, min: 1, max: MaxDrainClaimers}},
		{GroupRelay, "lease", "relay claim lease", (*clockDur)(&c.Lease)},
		{GroupRelay, "confirm-timeout", "publisher confirm timeout", (*durVal)(&c.ConfirmTimeout)},
		{GroupServices, "amqp-heartbeat", "broker connection heartbeat (a silent broker is dropped after about three)", (*durVal)(&c.AMQPHeartbeat)},
		{GroupServices, "amqp-dial-timeout", "broker dial timeout, handshake included", (*durVal)(&c.AMQPDialTimeout)},
		{GroupServices, "pg-connect-timeout", "Postgres connection set-up timeout (dial and login; a new pool's first answer)", (*durVal)(&c.PGConnectTimeout)},
		{GroupRelay, "backoff", "relay retry backoff steps", &c.Backoff},
		{GroupRelay, "alert-attempt", "relay attempt that raises an alert", &intVal{v: &c.AlertAttempt, min: 1}},
		{GroupRelay, "ad-publish-cutoff", "ads are not published at or after hh:mm", &c.AdPublishCutoff},
		{GroupRelay, "ad-resume-at", "deferred ads resume next day at hh:mm", &c.AdResumeAt},
		{GroupWorker, "ad-send-from", "worker advertising hours start hh:mm", &c.AdSendFrom},
		{GroupWorker, "ad-send-until", "worker advertising hours end hh:mm", &c.AdSendUntil},
		{GroupWorker, "delivery-limit", "returns of a message after which the worker parks it (DELIVERY_LIMIT, with an alert)", &intVal{v: &c.DeliveryLimit, min: 1}},
		{GroupWorker, "queue-max-length", "messages the main queue holds before RabbitMQ nacks new publishes (reject-publish; 0: unbounded)", &intVal{v: &c.QueueMaxLength, min: 0, why: "0: unbounded"}},
		{GroupWorker, "delivery-slack", "returns past delivery-limit the main queue's x-delivery-limit allows (a worker dying while it parks)", &intVal{v: &c.DeliverySlack, min: 1, why: "RabbitMQ must never dead-letter before the worker parks"}},
		{GroupWorker, "in-listener-retries", "in-listener retries of a definitely-not-sent failure", &intVal{v: &c.InListenerRetries, min: 0}},
		{GroupWorker, "in-listener-delay", "delay between in-listener retries", (*durVal)(&c.InListenerDelay)},
		{GroupWorker, "retry-ttl", "retry queue TTL", (*durVal)(&c.RetryTTL)},
		{GroupWorker, "retry-max", "retry queue round trips before parking", &intVal{v: &c.RetryMax, min: 0}},
		{GroupVendor, "vendor-timeout", "vendor HTTP timeout", (*durVal)(&c.VendorTimeout)},
		{GroupVendor, "vendor-account", "vendor account", (*strVal)(&c.VendorAccount)},
		{GroupVendor, "vendor-password", "vendor password", (*strVal)(&c.VendorPassword)},
		{GroupVendor, "sender-number", "sender phone number", (*strVal)(&c.SenderNumber)},
		{GroupCleanup, "sending-timeout", "SENDING age that cleanup turns into ERROR", (*clockDur)(&c.SendingTimeout)},
		{GroupCleanup, "cleanup-interval", "cleanup run interval", (*durVal)(&c.CleanupInterval)},
		{GroupCleanup, "cleanup-lock-ttl", "cleanup lock expiry", (*clockDur)(&c.CleanupLockTTL)},
		{GroupServices, "alert-timeout", "alert webhook timeout", (*durVal)(&c.AlertTimeout)},
		{GroupReconciler, "vendor-accept-window", "a send's expireat is its claim time plus this; the vendor drops a request it reaches later", (*clockDur)(&c.VendorAcceptWindow)},
		{GroupReconciler, "report-final-after", "the vendor's report of a request is final this long after its expireat", (*clockDur)(&c.ReportFinalAfter)},
		{GroupReconciler, "clock-margin", "allowed clock difference between this process and the vendor", (*clockDur)(&c.ClockMargin)},
		{GroupReconciler, "reconcile-interval", "reconciler run interval", (*durVal)(&c.ReconcileInterval)},
		{GroupReconciler, "reconcile-lock-ttl", "reconciler lock expiry", (*clockDur)(&c.ReconcileLockTTL)},
		{GroupReconciler, "reconcile-retry", "wait after a lookup that did not settle its row", (*clockDur)(&c.ReconcileRetry)},
		{GroupReconciler, "reconcile-max-tries", "lookups of one row before it is left to an operator, with an alert", &intVal{v: &c.ReconcileMaxTries, min: 2, why: "a row settles on two agreeing lookups"}},
		{GroupReconciler, "reconcile-batch", "ERROR rows the reconciler looks at per run", &intVal{v: &c.ReconcileBatch, min: 1, max: 10000}},
		{GroupReconciler, "reconcile-resend", "re-send a message the vendor definitively never received (docs/reconcile.md)", (*boolVal)(&c.ReconcileResend)},
		{GroupReconciler, "reconcile-max-resends", "re-sends of one message before it is settled FAILED", &intVal{v: &c.ReconcileMaxResends, min: 0}},
	}
}

// EnvName returns the environment variable for a flag name: pg-url →
// OUTBOXCHAOS_PG_URL.
func EnvName(flagName string) string {
	return "OUTBOXCHAOS_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// FromEnv overrides c with every OUTBOXCHAOS_* variable that is set.
func (c *Config) FromEnv() error {
	return c.FromLookup(os.LookupEnv)
}

// FromLookup is FromEnv with an injectable lookup.
func (c *Config) FromLookup(lookup func(string) (string, bool)) error {
	for _, f := range c.fields() {
		if v, ok := lookup(EnvName(f.name)); ok {
			if err := f.val.Set(v); err != nil {
				return fmt.Errorf("%s: %w", EnvName(f.name), err)
			}
		}
	}
	return nil
}

// Env returns c as OUTBOXCHAOS_*=value pairs, for a child process.
func (c *Config) Env() []string {
	var out []string
	for _, f := range c.fields() {
		out = append(out, EnvName(f.name)+"="+f.val.String())
	}
	return out
}

// Bind registers every setting as a flag on fs, defaulting to c's values.
func (c *Config) Bind(fs *flag.FlagSet) {
	for _, f := range c.fields() {
		fs.Var(f.val, f.name, f.usage+" (env "+EnvName(f.name)+")")
	}
}

// Load returns Default overridden by the environment, validated.
func Load() (Config, error) {
	c := Default()
	if err := c.FromEnv(); err != nil {
		return c, err
	}
	return c, c.Validate()
}

// NewClock returns the clock c.Clock describes.
func (c *Config) NewClock() (clock.Clock, error) { return clock.Parse(c.Clock) }

// MaxDrainBatch is the largest batch a draining relay can send as one
// publisher window (publisher.MaxWindow; a relay test keeps them equal).
const MaxDrainBatch = 512

// MaxDrainDepth bounds relay-drain-depth: each batch in flight holds its
// rows' leases and messages, and past a few batches the broker's confirms
// only come later.
const MaxDrainDepth = 32

// MaxDrainClaimers bounds relay-drain-claimers: each claimer holds a
// database connection while it claims.
const MaxDrainClaimers = 8

// Validate reports the first invalid value.
func (c *Config) Validate() error {
	var errs []error
	pos := func(name string, d time.Duration) {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("%s must be positive, got %s", name, d))
		}
	}
	for _, f := range c.fields() {
		if iv, ok := f.val.(*intVal); ok {
			if err := iv.check(f.name); err != nil {
				errs = append(errs, err)
			}
		}
	}
	pos("relay-interval", c.RelayInterval)
	pos("lease", c.Lease)
	pos("confirm-timeout", c.ConfirmTimeout)
	pos("amqp-heartbeat", c.AMQPHeartbeat)
	if c.AMQPHeartbeat%time.Second != 0 {
		// AMQP negotiates the heartbeat in whole seconds: 500ms would
		// become the broker's 60 s.
		errs = append(errs, fmt.Errorf("amqp-heartbeat must be whole seconds (AMQP carries seconds), got %s", c.AMQPHeartbeat))
	}
	pos("amqp-dial-timeout", c.AMQPDialTimeout)
	pos("pg-connect-timeout", c.PGConnectTimeout)
	pos("retry-ttl", c.RetryTTL)
	pos("vendor-timeout", c.VendorTimeout)
	pos("sending-timeout", c.SendingTimeout)
	pos("cleanup-interval", c.CleanupInterval)
	pos("cleanup-lock-ttl", c.CleanupLockTTL)
	pos("alert-timeout", c.AlertTimeout)
	pos("vendor-accept-window", c.VendorAcceptWindow)
	pos("report-final-after", c.ReportFinalAfter)
	pos("reconcile-interval", c.ReconcileInterval)
	pos("reconcile-lock-ttl", c.ReconcileLockTTL)
	pos("reconcile-retry", c.ReconcileRetry)
	if c.ClockMargin < 0 {
		errs = append(errs, fmt.Errorf("clock-margin must not be negative"))
	}
	if c.SendingTimeout > 0 && c.SendingTimeout <= c.VendorTimeout {
		// Cleanup would turn claims whose vendor call is still in flight
		// into ERROR: messages that reach the phone reported lost.
		errs = append(errs, fmt.Errorf("sending-timeout (%s) must be longer than vendor-timeout (%s)", c.SendingTimeout, c.VendorTimeout))
	}
	if c.InListenerDelay < 0 {
		errs = append(errs, fmt.Errorf("in-listener-delay must not be negative"))
	}
	if c.RelayDrain && c.BatchSize > MaxDrainBatch {
		// A draining relay sends each batch as one publisher window; a larger
		// batch is refused by the publisher on every run: nothing would ever
		// be published.
		errs = append(errs, fmt.Errorf("batch-size must be at most %d with relay-drain, got %d", MaxDrainBatch, c.BatchSize))
	}
	if len(c.Backoff) == 0 {
		errs = append(errs, errors.New("backoff needs at least one step"))
	}
	for _, b := range c.Backoff {
		pos("backoff step", b)
	}
	if c.Prefix == "" || strings.ContainsAny(c.Prefix, " /") {
		errs = append(errs, fmt.Errorf("prefix %q must be non-empty without spaces or slashes", c.Prefix))
	}
	if c.PGURL == "" || c.AMQPURL == "" {
		errs = append(errs, errors.New("pg-url and amqp-url are required"))
	}
	if _, err := clock.Parse(c.Clock); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// BackoffFor returns the wait after the attempt-th failure (1-based).
func (c *Config) BackoffFor(attempt int) time.Duration {
	if attempt < 1 {
		attempt = 1
	}
	if attempt > len(c.Backoff) {
		return c.Backoff[len(c.Backoff)-1]
	}
	return c.Backoff[attempt-1]
}

type strVal string

func (s *strVal) String() string     { return string(*s) }
func (s *strVal) Set(v string) error { *s = strVal(v); return nil }

type boolVal bool

func (b *boolVal) String() string { return strconv.FormatBool(bool(*b)) }
func (b *boolVal) Set(v string) error {
	x, err := strconv.ParseBool(v)
	if err != nil {
		return fmt.Errorf("want true or false, got %q", v)
	}
	*b = boolVal(x)
	return nil
}
func (b *boolVal) IsBoolFlag() bool { return true }

// intVal is an integer setting and its valid range: at least min, and at
// most max when max is set; why, if set, says what the bound protects.
type intVal struct {
	v        *int
	min, max int
	why      string
}

func (i *intVal) String() string {
	if i.v == nil {
		return "0"
	}
	return strconv.Itoa(*i.v)
}

func (i *intVal) Set(v string) error {
	x, err := strconv.Atoi(v)
	if err != nil {
		return fmt.Errorf("want an integer, got %q", v)
	}
	*i.v = x
	return nil
}

// check says what is wrong with the setting's value, named name.
func (i *intVal) check(name string) error {
	if *i.v >= i.min && (i.max == 0 || *i.v <= i.max) {
		return nil
	}
	want := fmt.Sprintf("%d..%d", i.min, i.max)
	if i.max == 0 {
		want = fmt.Sprintf(">= %d", i.min)
	}
	if i.why != "" {
		want += " (" + i.why + ")"
	}
	return fmt.Errorf("%s must be %s, got %d", name, want, *i.v)
}

// durVal is a duration the pipeline waits on a real timer (an interval,
// a timeout, a delay); clockDur one it compares with its clock (a lease,
// an age, a window), which a virtual clock moves.
type durVal time.Duration

type clockDur time.Duration

func (d *clockDur) String() string     { return time.Duration(*d).String() }
func (d *clockDur) Set(v string) error { return (*durVal)(d).Set(v) }

func (d *durVal) String() string { return time.Duration(*d).String() }
func (d *durVal) Set(v string) error {
	x, err := time.ParseDuration(v)
	if err != nil {
		return fmt.Errorf("want a duration like 5m or 250ms, got %q", v)
	}
	*d = durVal(x)
	return nil
}

// BrokerDeliveryLimit is the main queue's x-delivery-limit: DeliverySlack
// returns past DeliveryLimit, so the worker parks a message (with its
// reason and alert) before RabbitMQ would dead-letter it without either.
func (c *Config) BrokerDeliveryLimit() int { return c.DeliveryLimit + c.DeliverySlack }

// InRelayWindow reports whether t (read in Seoul) is inside the relay's
// daily window, RelayFrom to RelayUntil, both minutes included.
func (c *Config) InRelayWindow(t time.Time) bool {
	t = t.In(clock.Seoul)
	m := t.Hour()*60 + t.Minute()
	return m >= c.RelayFrom.Minutes() && m <= c.RelayUntil.Minutes()
}

// SendDeadline is the acceptance deadline (expireat) of a send claimed at
// claimedAt: VendorAcceptWindow later, and for an advertising message no
// later than AdSendUntil that day, so that no vendor delivers an ad after
// the advertising hours however long the request took to reach it.
func (c *Config) SendDeadline(claimedAt time.Time, advertising bool) time.Time {
	d := claimedAt.Add(c.VendorAcceptWindow)
	if until := c.AdSendUntil.On(claimedAt); advertising && until.Before(d) {
		d = until
	}
	return d
}

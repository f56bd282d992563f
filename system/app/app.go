// Package app owns process wiring shared by every pipeline process: logging
// (log/slog, JSON when OUTBOXCHAOS_LOG_FORMAT=json so a harness can read
// events), the database pool with a start-up check, migrations, the clock
// and the alert sender. It turns configuration into running parts; it holds
// no pipeline rules of its own.
package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/outboxchaos/outboxchaos/system/alert"
	"github.com/outboxchaos/outboxchaos/system/broker"
	"github.com/outboxchaos/outboxchaos/system/canary"
	"github.com/outboxchaos/outboxchaos/system/clock"
	"github.com/outboxchaos/outboxchaos/system/config"
	"github.com/outboxchaos/outboxchaos/system/crashpoint"
	"github.com/outboxchaos/outboxchaos/system/preflight"
	"github.com/outboxchaos/outboxchaos/system/schema"
)

// CheckLogEnv validates OUTBOXCHAOS_LOG_FORMAT (text or json) and
// OUTBOXCHAOS_LOG_LEVEL (info or debug) as a flag's value is validated:
// a typo is an error naming the variable, never silently the default.
func CheckLogEnv() error {
	for _, v := range []struct {
		name  string
		valid []string
	}{{"OUTBOXCHAOS_LOG_FORMAT", []string{"text", "json"}}, {"OUTBOXCHAOS_LOG_LEVEL", []string{"info", "debug"}}} {
		got, ok := os.LookupEnv(v.name)
		if ok && got != "" && !slices.Contains(v.valid, got) {
			return fmt.Errorf("%s=%q: want %s", v.name, got, strings.Join(v.valid, " or "))
		}
	}
	return nil
}

// Logger returns the process logger writing to w: JSON when
// OUTBOXCHAOS_LOG_FORMAT=json, text otherwise; debug with
// OUTBOXCHAOS_LOG_LEVEL=debug.
func Logger(w io.Writer, instance string) *slog.Logger {
	lvl := slog.LevelInfo
	if os.Getenv("OUTBOXCHAOS_LOG_LEVEL") == "debug" {
		lvl = slog.LevelDebug
	}
	opts := &slog.HandlerOptions{Level: lvl}
	var h slog.Handler
	if os.Getenv("OUTBOXCHAOS_LOG_FORMAT") == "json" {
		h = slog.NewJSONHandler(w, opts)
	} else {
		h = slog.NewTextHandler(w, opts)
	}
	return slog.New(h).With("instance", instance)
}

// Redact hides the password of a URL for messages; a list of URLs
// separated by commas (a broker cluster's nodes) has each one's hidden.
func Redact(s string) string {
	if strings.Contains(s, ",") {
		var out []string
		for _, part := range strings.Split(s, ",") {
			out = append(out, Redact(strings.TrimSpace(part)))
		}
		return strings.Join(out, ",")
	}
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

// PoolConfig is the configuration of every pipeline process's pool: the
// URL, the connect timeout, and generic plans. pgx prepares each statement
// once per connection; PostgreSQL then plans it for its parameters at each
// execution while it judges a generic plan costlier, which it always did
// for the relay's claim (its LIMIT and due time are parameters): 0.7 ms of
// planning per claim of 50 rows, a third of the statement. Every statement
// of the pipeline is a key lookup or a scan of a partial index, whose plan
// does not depend on the values (the bench checks the claim's generic plan
// uses its index at a million rows), so each connection plans each
// statement once. A plan_cache_mode in the URL wins.
func PoolConfig(cfg config.Config) (*pgxpool.Config, error) {
	pc, err := pgxpool.ParseConfig(cfg.PGURL)
	if err != nil {
		return nil, fmt.Errorf("bad Postgres URL (OUTBOXCHAOS_PG_URL / --pg-url): %w", err)
	}
	pc.ConnConfig.ConnectTimeout = cfg.PGConnectTimeout
	if _, set := pc.ConnConfig.RuntimeParams["plan_cache_mode"]; !set {
		pc.ConnConfig.RuntimeParams["plan_cache_mode"] = "force_generic_plan"
	}
	// Every statement and commit is a crash point (system/crashpoint).
	pc.ConnConfig.Tracer = crashpoint.Tracer{}
	return pc, nil
}

// OpenPool opens a pool with PoolConfig and checks the database answers
// within pg-connect-timeout, with a message that names the URL and the
// setting to change.
func OpenPool(ctx context.Context, cfg config.Config) (*pgxpool.Pool, error) {
	pc, err := PoolConfig(cfg)
	if err != nil {
		return nil, err
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("open Postgres pool: %w", err)
	}
	pctx, cancel := context.WithTimeout(ctx, cfg.PGConnectTimeout)
	defer cancel()
	if err := pool.Ping(pctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("Postgres at %s: %s (set OUTBOXCHAOS_PG_URL or --pg-url): %w", Redact(cfg.PGURL), preflight.PostgresReason(err), err)
	}
	return pool, nil
}

// Migrate runs the schema migration on one dedicated connection: the
// advisory-locked migration, or the unlocked one when the MigrateUnlocked
// canary is armed.
func Migrate(ctx context.Context, cfg config.Config) error {
	migrate := schema.Migrate
	if canary.On(canary.MigrateUnlocked) {
		migrate = schema.MigrateUnlocked
	}
	cc, err := pgx.ParseConfig(cfg.PGURL)
	if err != nil {
		return fmt.Errorf("bad Postgres URL (OUTBOXCHAOS_PG_URL / --pg-url): %w", err)
	}
	cc.ConnectTimeout = cfg.PGConnectTimeout
	cc.Tracer = crashpoint.Tracer{}
	conn, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		return fmt.Errorf("Postgres at %s: %s (set OUTBOXCHAOS_PG_URL or --pg-url): %w", Redact(cfg.PGURL), preflight.PostgresReason(err), err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return migrate(ctx, conn)
}

// DeclareTopology connects to RabbitMQ and declares the topology, failing
// with a clear message when the broker is unreachable.
func DeclareTopology(cfg config.Config) error {
	conn, _, err := broker.Dial(cfg.AMQPURL, amqp.Config{Dial: amqp.DefaultDial(cfg.AMQPDialTimeout)})
	if err != nil {
		return fmt.Errorf("RabbitMQ at %s: %s (set OUTBOXCHAOS_AMQP_URL or --amqp-url): %w", Redact(cfg.AMQPURL), preflight.RabbitMQReason(err), err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return fmt.Errorf("open channel: %w", err)
	}
	defer ch.Close()
	return broker.TopologyOf(cfg).Declare(ch)
}

// Parts are what every process needs.
type Parts struct {
	Log    *slog.Logger
	Clock  clock.Clock
	Alerts *alert.Webhook
}

// NewParts builds the logger, clock and alert sender of cfg.
func NewParts(cfg config.Config, logOut io.Writer) (Parts, error) {
	log := Logger(logOut, cfg.Instance)
	clk, err := cfg.NewClock()
	if err != nil {
		return Parts{}, err
	}
	return Parts{Log: log, Clock: clk, Alerts: alert.NewWebhook(cfg.AlertURL, cfg.AlertTimeout, log)}, nil
}

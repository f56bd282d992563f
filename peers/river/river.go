// Command peer-river runs River (github.com/riverqueue/river with
// riverdriver/riverpgxv5) as an outbox relay under test: the batch job
// inserts one River job per outbox row with InsertManyTx in the business
// transaction; a River client works them, each job publishing its message
// to RabbitMQ with our confirm-mode publisher (system/publisher: confirms
// awaited up to the confirm timeout, message_id notification-outbox-{id}).
// A job that does not get its confirm returns an error and River retries
// it.
//
// This directory is a nested module built twice: go.mod pins River
// v0.51.2, go047.mod v0.47.0 (go build -modfile=go047.mod), so the root
// module depends on neither. Nothing of River is forked: kill-points are
// hit in the job's Work and by a pgx tracer on River's pool; the rescuer
// race (OUTBOXCHAOS_PEER_RESCUE_RACE=1) is forced by the same tracer.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"

	"github.com/outboxchaos/outboxchaos/history"
	"github.com/outboxchaos/outboxchaos/peers/seam"
	"github.com/outboxchaos/outboxchaos/system/killpoint"
	"github.com/outboxchaos/outboxchaos/system/publisher"
)

// version and name are set per build (-ldflags "-X main.version=… -X
// main.name=…"; Makefile target peer-bins).
var (
	version = "v0.51.2"
	name    = "river0512"
)

func main() {
	os.Exit(seam.Main(pick, os.Args[1:], os.Stdout, os.Stderr))
}

func pick(impl string) (seam.Adapter, error) {
	if impl != name {
		return nil, fmt.Errorf("--impl %q: this binary is %s (River %s)", impl, name, version)
	}
	return adapter{name: name}, nil
}

// Args is one outbox message as a River job.
type Args struct {
	OutboxID  int64  `json:"outbox_id"`
	MessageID string `json:"message_id"`
	Body      []byte `json:"body"` // base64 in the job's JSON: the exact bytes our relay would publish
}

// Kind implements river.JobArgs.
func (Args) Kind() string { return "outbox_publish" }

// Compressed timings, like the harness's (a 15-minute lease is 1.5 s).
const (
	jobTimeout   = 2 * time.Second // River's default 1 min
	rescueAfter  = 3 * time.Second // River's default 1 h
	retryBase    = 100 * time.Millisecond
	retryCeiling = 3 * time.Second
)

type adapter struct{ name string }

func (a adapter) Name() string { return a.name }

func (a adapter) Settings() []seam.Setting {
	return []seam.Setting{
		seam.S("version", "github.com/riverqueue/river "+version+" + riverdriver/riverpgxv5", "pinned in go.mod"),
		seam.S("enqueue", "client.InsertManyTx on the business transaction (insert-only client, riverpgxv5.New(nil))", "River's transactional enqueue"),
		seam.S("migrations", "rivermigrate up, all versions", "River's docs"),
		seam.S("Queues", "default: MaxWorkers 100", "River's example value; with FetchCooldown 100ms it bounds the relay near 1000 jobs/s (make bench measures 1000)"),
		seam.S("JobTimeout", jobTimeout.String(), "default 1m, compressed"),
		seam.S("RescueStuckJobsAfter", rescueAfter.String(), "default 1h, compressed (must be ≥ JobTimeout)"),
		seam.S("JobRescuer interval", "30s (default, not configurable)", "River's default"),
		seam.S("RetryPolicy", "100ms·2^(attempt-1), at most 3s", "default attempt^4 s, compressed like our backoff"),
		seam.S("MaxAttempts", "25 (default)", "River's default"),
		seam.S("FetchPollInterval / FetchCooldown", "defaults (1s / 100ms), LISTEN/NOTIFY on", "River's defaults"),
		seam.S("CompletedJobRetentionPeriod", "default 24h", "completed rows stay for the snapshot"),
		seam.S("job work", "system/publisher: persistent, mandatory, confirms awaited up to OUTBOXCHAOS_CONFIRM_TIMEOUT (600ms), message_id notification-outbox-{id}", "the issue's recipe"),
		seam.S("UniqueOpts", "none", "the outbox row's dedup_key already makes the insert once"),
	}
}

func (a adapter) Migrate(ctx context.Context, env seam.Env) error {
	pool, err := seam.OpenPool(ctx, env.Cfg.PGURL, nil, 2)
	if err != nil {
		return err
	}
	defer pool.Close()
	// River's migrations are not safe to run concurrently: one at a time
	// on this schema.
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("acquire: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(hashtext(current_schema() || '.river_migrate'))`); err != nil {
		return fmt.Errorf("lock river migrations: %w", err)
	}
	defer conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock(hashtext(current_schema() || '.river_migrate'))`)
	m, err := rivermigrate.New(riverpgxv5.New(pool), nil)
	if err != nil {
		return fmt.Errorf("river migrator: %w", err)
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("river migrate: %w", err)
	}
	return nil
}

func (a adapter) Enqueue(ctx context.Context, env seam.Env, tx pgx.Tx, msgs []seam.Message) error {
	c, err := river.NewClient(riverpgxv5.New(nil), &river.Config{Logger: quiet(env.Log)})
	if err != nil {
		return fmt.Errorf("river insert-only client: %w", err)
	}
	var ps []river.InsertManyParams
	for _, m := range msgs {
		ps = append(ps, river.InsertManyParams{Args: Args{OutboxID: m.OutboxID, MessageID: m.MessageID, Body: m.Body}})
	}
	if _, err := c.InsertManyTx(ctx, tx, ps); err != nil {
		return fmt.Errorf("river InsertManyTx: %w", err)
	}
	return nil
}

// retry is the compressed retry policy.
type retry struct{}

func (retry) NextRetry(job *rivertype.JobRow) time.Time {
	d := retryBase << min(max(job.Attempt-1, 0), 10)
	return time.Now().Add(min(d, retryCeiling))
}

func (a adapter) Relay(ctx context.Context, env seam.Env) error {
	race := newRescueRace(os.Getenv("OUTBOXCHAOS_PEER_RESCUE_RACE") == "1", env.Log)
	pool, err := seam.OpenPool(ctx, env.Cfg.PGURL, &seam.Tracer{Rules: race.rules()}, 0)
	if err != nil {
		return err
	}
	defer pool.Close()
	pub := publisher.New(env.Cfg.AMQPURL, env.Exchange, env.Cfg.ConfirmTimeout)
	defer pub.Close()
	workers := river.NewWorkers()
	if err := river.AddWorkerSafely(workers, &worker{pub: pub, log: env.Log, race: race}); err != nil {
		return fmt.Errorf("register river worker: %w", err)
	}
	c, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		ID:                   env.Cfg.Instance,
		Queues:               map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 100}},
		Workers:              workers,
		JobTimeout:           jobTimeout,
		RescueStuckJobsAfter: rescueAfter,
		RetryPolicy:          retry{},
		Logger:               quiet(env.Log),
	})
	if err != nil {
		return fmt.Errorf("river client: %w", err)
	}
	if err := c.Start(ctx); err != nil {
		return fmt.Errorf("start river client: %w", err)
	}
	env.Log.Info("river client started", history.KeyEvent, history.FirstRun)
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return c.Stop(sctx)
}

// quiet is River's logger: warnings and errors only.
func quiet(l *slog.Logger) *slog.Logger {
	return slog.New(levelFilter{l.Handler(), slog.LevelWarn})
}

type levelFilter struct {
	slog.Handler
	min slog.Level
}

func (f levelFilter) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= f.min && f.Handler.Enabled(ctx, l)
}

// worker publishes one message per job.
type worker struct {
	river.WorkerDefaults[Args]
	pub  *publisher.Publisher
	log  *slog.Logger
	race *rescueRace
}

func (w *worker) Work(ctx context.Context, job *river.Job[Args]) error {
	killpoint.Hit(killpoint.RelayAfterClaim)
	w.race.holdWork(job.ID)
	// The confirm wait has its own deadline (the publisher's confirm
	// timeout), as in our relay; River's job timeout only cancels ctx, it
	// must not turn a publish already on the wire into a failure.
	res, err := w.pub.PublishBatch(context.WithoutCancel(ctx), []publisher.Message{{MessageID: job.Args.MessageID, RoutingKey: "send", Body: job.Args.Body}})
	outcome := "write-failed"
	if err == nil && len(res) == 1 {
		outcome, err = res[0].Outcome.String(), res[0].Err
	}
	w.log.Info("publish outcome", history.KeyEvent, history.Publish, history.KeyMessageID, job.Args.MessageID, history.KeyOutcome, outcome,
		"job_id", job.ID, "attempt", job.Attempt)
	if outcome != publisher.Confirmed.String() {
		return fmt.Errorf("publish %s: %s: %v", job.Args.MessageID, outcome, err)
	}
	killpoint.Hit(killpoint.RelayAfterConfirm)
	return nil
}

package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/outboxchaos/outboxchaos/system/app"
	"github.com/outboxchaos/outboxchaos/system/broker"
	"github.com/outboxchaos/outboxchaos/system/clock"
	"github.com/outboxchaos/outboxchaos/system/config"
	"github.com/outboxchaos/outboxchaos/system/notification"
	"github.com/outboxchaos/outboxchaos/system/sandbox"
)

// Members is how many members (with SMS consent and a registered number)
// every run seeds; outbox rows and messages cycle through them.
const Members = 1000

// Env is one benchmark run's slice of the shared services: a Postgres schema
// and a queue-name prefix (normally a sandbox of its own), the schema
// migrated with seeded members, a pool, a virtual clock at 10:00 Seoul (so
// no time-of-day rule ever blocks), and the list of every exchange and queue
// declared, deleted by Close.
type Env struct {
	Schema string        // Postgres schema of the run
	Cfg    config.Config // pipeline configuration pointed at the schema and prefix
	Pool   *pgxpool.Pool
	Clock  *clock.Virtual
	// Log is the pipeline's logger in every measurement: JSON at info level
	// into io.Discard, so formatting costs what it costs in production and
	// only the write is left out.
	Log *slog.Logger

	sb         *sandbox.Sandbox // nil when the caller owns schema and prefix
	mu         sync.Mutex
	seq        int
	topologies map[string]bool // prefixes declared with broker.Topology
}

// NewEnv creates a sandbox (schema and prefix, see system/sandbox), migrates
// it and seeds the members; Close drops it all again. On error everything
// created so far is removed.
func NewEnv(ctx context.Context, pgURL, amqpURL string) (*Env, error) {
	sb, err := sandbox.New(ctx, pgURL, amqpURL, "bench")
	if err != nil {
		return nil, fmt.Errorf("create sandbox: %w", err)
	}
	e, err := attach(ctx, sb.PGURL, amqpURL, sb.Prefix, sb.Schema, sb, true)
	if err != nil {
		_ = sb.Close()
		return nil, err
	}
	return e, nil
}

// Attach works in an existing schema, already migrated (pgURL's search_path
// names it, as testenv.NewMigratedSchema gives), and under an existing
// queue-name prefix. It seeds the members. Close deletes what the run
// declared and closes the pool; the schema and the prefix stay the caller's.
func Attach(ctx context.Context, pgURL, amqpURL, prefix string) (*Env, error) {
	return attach(ctx, pgURL, amqpURL, prefix, "", nil, false)
}

func attach(ctx context.Context, pgURL, amqpURL, prefix, schemaName string, sb *sandbox.Sandbox, migrate bool) (_ *Env, err error) {
	e := &Env{Schema: schemaName, sb: sb, topologies: map[string]bool{}}
	defer func() {
		if err != nil {
			e.sb = nil // the caller removes it
			_ = e.Close()
		}
	}()
	cfg := config.Default()
	cfg.PGURL = pgURL
	cfg.AMQPURL = amqpURL
	cfg.Prefix = prefix
	cfg.Instance = "bench"
	// Production mode, as production runs: the relay and the worker skip
	// the non-production registered-number queries (they are still seeded).
	cfg.Production = true
	e.Clock = clock.NewVirtual(clock.At(time.Now(), 10, 0), 1)
	cfg.Clock = e.Clock.Setting()
	e.Cfg = cfg
	e.Log = slog.New(slog.NewJSONHandler(io.Discard, nil))
	if migrate {
		if err := app.Migrate(ctx, cfg); err != nil {
			return nil, fmt.Errorf("migrate schema %s: %w", schemaName, err)
		}
	}
	if e.Pool, err = app.OpenPool(ctx, cfg); err != nil {
		return nil, err
	}
	if e.Schema == "" {
		if err := e.Pool.QueryRow(ctx, `SELECT current_schema()`).Scan(&e.Schema); err != nil {
			return nil, fmt.Errorf("read current schema: %w", err)
		}
	}
	if err := e.seedMembers(ctx); err != nil {
		return nil, err
	}
	return e, nil
}

// Close deletes every exchange and queue the run declared, closes the pool
// and, for a NewEnv sandbox, drops the schema. Safe to call twice.
func (e *Env) Close() error {
	if e == nil {
		return nil
	}
	var errs []error
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e.mu.Lock()
	prefixes := keys(e.topologies)
	e.topologies = map[string]bool{}
	e.mu.Unlock()
	for _, p := range prefixes {
		if err := broker.Delete(ctx, e.Cfg.AMQPURL, p); err != nil {
			errs = append(errs, err)
		}
	}
	if e.Pool != nil {
		e.Pool.Close()
		e.Pool = nil
	}
	if e.sb != nil {
		if err := e.sb.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// name returns a fresh name under the sandbox prefix: {prefix}.{tag}{n}.
func (e *Env) name(tag string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.seq++
	return fmt.Sprintf("%s.%s%d", e.Cfg.Prefix, tag, e.seq)
}

// Topology declares the pipeline's real topology (direct exchange, quorum
// main queue with single active consumer, retry and parking queues) under a
// fresh prefix and returns the configuration pointed at it. DropTopology (or
// Close) deletes it.
func (e *Env) Topology(tag string) (config.Config, error) {
	cfg := e.Cfg
	cfg.Prefix = e.name(tag)
	e.mu.Lock()
	e.topologies[cfg.Prefix] = true
	e.mu.Unlock()
	conn, ch, err := dial(cfg.AMQPURL)
	if err != nil {
		return cfg, err
	}
	defer conn.Close()
	defer ch.Close()
	if err := broker.TopologyOf(cfg).Declare(ch); err != nil {
		return cfg, fmt.Errorf("declare bench topology %s: %w", cfg.Prefix, err)
	}
	return cfg, nil
}

// DropTopology deletes the exchange and queues under prefix.
func (e *Env) DropTopology(ctx context.Context, prefix string) error {
	if err := broker.Delete(ctx, e.Cfg.AMQPURL, prefix); err != nil {
		return fmt.Errorf("delete bench topology %s: %w", prefix, err)
	}
	e.mu.Lock()
	delete(e.topologies, prefix)
	e.mu.Unlock()
	return nil
}

func dial(url string) (*amqp.Connection, *amqp.Channel, error) {
	conn, err := amqp.DialConfig(url, amqp.Config{Dial: amqp.DefaultDial(5 * time.Second), Heartbeat: 10 * time.Second})
	if err != nil {
		return nil, nil, fmt.Errorf("dial broker: %w", err)
	}
	ch, err := conn.Channel()
	if err != nil {
		_ = conn.Close()
		return nil, nil, fmt.Errorf("open channel: %w", err)
	}
	return conn, ch, nil
}

// seedMembers inserts members 1..Members with consent and registers their
// numbers, so both the relay and the worker let every message through.
func (e *Env) seedMembers(ctx context.Context) error {
	if _, err := e.Pool.Exec(ctx, `INSERT INTO members (id, name, phone, sms_consent, active)
		SELECT g, '회원' || g, '010' || lpad(g::text, 8, '0'), true, true FROM generate_series(1, $1::int) g`, Members); err != nil {
		return fmt.Errorf("seed members: %w", err)
	}
	if _, err := e.Pool.Exec(ctx, `INSERT INTO registered_numbers (phone)
		SELECT '010' || lpad(g::text, 8, '0') FROM generate_series(1, $1::int) g`, Members); err != nil {
		return fmt.Errorf("seed registered numbers: %w", err)
	}
	return nil
}

// memberOf is the member an outbox id is sent to.
func memberOf(id int64) int64 { return id%Members + 1 }

// Payload is the notification the benchmark sends for outbox row id, as the
// relay publishes it (with outbox_id and dedup_key): a grade renewal, not
// advertising, scheduled for the virtual clock's date.
func (e *Env) Payload(id int64) notification.Payload { return payloadFor(id, e.today()) }

// Body is the JSON message body for outbox row id: the same bytes (and so
// the same size) as the relay publishes for a row inserted by Backlog.
func (e *Env) Body(id int64) []byte { return bodyFor(id, e.today()) }

func payloadFor(id int64, date string) notification.Payload {
	m := memberOf(id)
	tpl, _ := notification.TemplateFor(notification.GradeRenewal)
	return notification.Payload{
		OutboxID: id, DedupKey: dedupKey(id), Kind: notification.GradeRenewal, MemberID: m,
		Phone: fmt.Sprintf("010%08d", m), Template: tpl.Code,
		Variables:     map[string]string{"name": fmt.Sprintf("회원%d", m), "grade": "GOLD"},
		ScheduledDate: date,
	}
}

func bodyFor(id int64, date string) []byte {
	b, err := json.Marshal(payloadFor(id, date))
	if err != nil {
		panic(fmt.Sprintf("encode bench payload: %v", err)) // a fixed struct: cannot fail
	}
	return b
}

func dedupKey(id int64) string { return fmt.Sprintf("BENCH:%d", id) }

func (e *Env) today() string { return clock.Date(e.Clock.Now()).Format(time.DateOnly) }

// ResetOutbox empties the outbox (TRUNCATE, so no dead tuples from an
// earlier measurement slow the next) and the inbox.
func (e *Env) ResetOutbox(ctx context.Context) error {
	if _, err := e.Pool.Exec(ctx, `TRUNCATE notification_outbox, notification_histories RESTART IDENTITY`); err != nil {
		return fmt.Errorf("truncate outbox and inbox: %w", err)
	}
	return nil
}

// backlogChunk bounds one INSERT … SELECT generate_series statement.
const backlogChunk = 250_000

// Backlog inserts PENDING rows with ids from..to (inclusive), due now, in
// statements of at most backlogChunk rows, then VACUUM ANALYZEs the table.
// The payload is the one outbox.Enqueue would store for Payload(id).
// progress, if set, is called after each statement with the rows so far.
func (e *Env) Backlog(ctx context.Context, from, to int64, progress func(done int64)) error {
	now := e.Clock.Now()
	for lo := from; lo <= to; lo += backlogChunk {
		hi := min(lo+backlogChunk-1, to)
		if _, err := e.Pool.Exec(ctx, `
			INSERT INTO notification_outbox
				(id, dedup_key, kind, payload, advertising, scheduled_date, status, next_attempt_at, created_at, updated_at)
			SELECT g, 'BENCH:' || g, 'GRADE_RENEWAL',
			       jsonb_build_object('kind', 'GRADE_RENEWAL', 'member_id', g % $3 + 1,
			                          'phone', '010' || lpad((g % $3 + 1)::text, 8, '0'),
			                          'template', 'GRADE_RENEWAL_V1',
			                          'variables', jsonb_build_object('name', '회원' || (g % $3 + 1), 'grade', 'GOLD'),
			                          'advertising', false, 'scheduled_date', $4::text),
			       false, $4::date, 'PENDING', $5, $5, $5
			  FROM generate_series($1::bigint, $2::bigint) g`, lo, hi, int64(Members), e.today(), now); err != nil {
			return fmt.Errorf("insert outbox backlog %d..%d: %w", lo, hi, err)
		}
		if progress != nil {
			progress(hi - from + 1)
		}
	}
	if _, err := e.Pool.Exec(ctx, `SELECT setval(pg_get_serial_sequence('notification_outbox', 'id'), $1::bigint)`, to); err != nil {
		return fmt.Errorf("advance outbox id sequence: %w", err)
	}
	if _, err := e.Pool.Exec(ctx, `VACUUM ANALYZE notification_outbox`); err != nil {
		return fmt.Errorf("vacuum analyze outbox: %w", err)
	}
	return nil
}

// CountStatus returns how many outbox rows have status.
func (e *Env) CountStatus(ctx context.Context, status string) (int, error) {
	var n int
	if err := e.Pool.QueryRow(ctx, `SELECT count(*) FROM notification_outbox WHERE status = $1`, status).Scan(&n); err != nil {
		return 0, fmt.Errorf("count %s outbox rows: %w", status, err)
	}
	return n, nil
}

// QueueDepth returns the ready messages in queue.
func (e *Env) QueueDepth(queue string) (int, error) {
	conn, ch, err := dial(e.Cfg.AMQPURL)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	defer ch.Close()
	q, err := ch.QueueDeclarePassive(queue, true, false, false, false, nil)
	if err != nil {
		return 0, fmt.Errorf("inspect queue %s: %w", queue, err)
	}
	return q.Messages, nil
}

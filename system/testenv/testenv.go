// Package testenv gives each test its own slice of the shared services: a
// fresh Postgres schema (reached through a URL whose search_path names it,
// so a query that forgets it fails loudly) and a fresh RabbitMQ name prefix.
// Both are removed in t.Cleanup, even when the test fails half-way.
//
// The services default to the local ones (127.0.0.1:5432, 127.0.0.1:5672);
// OUTBOXCHAOS_TEST_PG_URL and OUTBOXCHAOS_TEST_AMQP_URL (or the runtime
// OUTBOXCHAOS_PG_URL / OUTBOXCHAOS_AMQP_URL) point elsewhere. When those do
// not answer and the test binary was built with the containers tag
// (go test -tags containers ./...), Check starts PostgreSQL and RabbitMQ in
// Docker with testcontainers-go and PGURL and AMQPURL return their URLs from
// then on. When nothing works, Require fails with one message saying how to
// point at services.
//
// Containers are per test binary, with host networking on free ports of
// 127.0.0.1 (package infra); OUTBOXCHAOS_TEST_CONTAINERS=1 starts them even
// when the configured services answer. testcontainers' reaper (Ryuk) is
// off, its image being unpullable without a registry: a package calls
// StopContainers from its TestMain, or they outlive it (each carries the
// label outboxchaos, by which CI removes stragglers).
//
// It also holds the helpers tests across packages share, so each has one
// copy: AMQPChannel, Eventually (wait for a condition, never a fixed sleep)
// and AlertRecorder (an alert.Sender that keeps what it is sent).
package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/outboxchaos/outboxchaos/system/app"
	"github.com/outboxchaos/outboxchaos/system/broker"
	"github.com/outboxchaos/outboxchaos/system/sandbox"
	"github.com/outboxchaos/outboxchaos/system/schema"
)

// PGURL returns the base Postgres URL for tests: the container's once Check
// has started one, otherwise the configured or local one.
func PGURL() string {
	if e := started.Load(); e != nil {
		return e.pg
	}
	return configuredPGURL()
}

// AMQPURL returns the RabbitMQ URL for tests: the container's once Check has
// started one, otherwise the configured or local one.
func AMQPURL() string {
	if e := started.Load(); e != nil {
		return e.amqp
	}
	return configuredAMQPURL()
}

// configuredPGURL is the Postgres URL from the environment, or the local one.
func configuredPGURL() string {
	for _, k := range []string{"OUTBOXCHAOS_TEST_PG_URL", "OUTBOXCHAOS_PG_URL"} {
		if v := os.Getenv(k); v != "" {
			return v
		}
	}
	return "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
}

// configuredAMQPURL is the RabbitMQ URL from the environment, or the local
// one.
func configuredAMQPURL() string {
	for _, k := range []string{"OUTBOXCHAOS_TEST_AMQP_URL", "OUTBOXCHAOS_AMQP_URL"} {
		if v := os.Getenv(k); v != "" {
			return v
		}
	}
	return "amqp://guest:guest@127.0.0.1:5672/"
}

// endpoints are the URLs of services Check started.
type endpoints struct {
	pg, amqp string
}

var (
	reachOnce sync.Once
	reachErr  error
	// started holds the container URLs once Check has started containers;
	// nil means the configured services are in use.
	started atomic.Pointer[endpoints]
)

// EnvForceContainers set to 1 makes Check start containers even when the
// configured services answer (with the containers build tag): how CI runs
// tests on containers on a machine that has the local services too.
const EnvForceContainers = "OUTBOXCHAOS_TEST_CONTAINERS"

// probeTimeout bounds each reachability probe of one pair of services.
const probeTimeout = 5 * time.Second

// containerStartTimeout bounds starting the containers, image pulls
// included.
const containerStartTimeout = 5 * time.Minute

// Check reports whether the test services answer. It probes the configured
// (or local) services; when they do not answer it tries to start containers
// (see the package doc) and, if they come up, uses both of them even when one
// configured service did answer. When that fails too it returns one error
// naming both problems and saying how to point at services. The outcome is
// decided once per test binary.
func Check() error {
	reachOnce.Do(func() {
		localErr := probe(configuredPGURL(), configuredAMQPURL())
		if localErr == nil && os.Getenv(EnvForceContainers) == "1" {
			localErr = fmt.Errorf("%s=1: containers asked for", EnvForceContainers)
		}
		e, err := resolve(localErr, func() (string, string, error) {
			ctx, cancel := context.WithTimeout(context.Background(), containerStartTimeout)
			defer cancel()
			pg, amqpURL, err := startContainers(ctx)
			if err != nil {
				return "", "", err
			}
			if err := probe(pg, amqpURL); err != nil {
				_ = StopContainers()
				return "", "", fmt.Errorf("containers started but do not answer: %w", err)
			}
			return pg, amqpURL, nil
		})
		if e != nil {
			started.Store(e)
			fmt.Fprintf(os.Stderr, "testenv: configured services unreachable (%v); using containers: Postgres at %s, RabbitMQ at %s\n",
				localErr, redact(e.pg), redact(e.amqp))
		}
		reachErr = err
	})
	return reachErr
}

// resolve decides which services the tests use, given the result of probing
// the configured ones and a function that starts containers. It returns nil
// endpoints and a nil error when the configured services answer (start is
// not called), the started endpoints when start succeeds, and otherwise an
// error naming both problems and the ways to fix them.
func resolve(localErr error, start func() (pgURL, amqpURL string, err error)) (*endpoints, error) {
	if localErr == nil {
		return nil, nil
	}
	pg, amqpURL, err := start()
	if err != nil {
		return nil, &unreachableError{local: localErr, containers: err}
	}
	return &endpoints{pg: pg, amqp: amqpURL}, nil
}

// unreachableError is Check's error when neither the configured services nor
// containers are usable.
type unreachableError struct {
	local      error // why the configured services did not answer
	containers error // why containers could not be used
}

func (e *unreachableError) Error() string {
	return fmt.Sprintf(`test services unreachable.
  configured services: %v
  containers: %v
Do one of:
  - point at running services: OUTBOXCHAOS_TEST_PG_URL=postgres://user:pass@host:5432/db?sslmode=disable OUTBOXCHAOS_TEST_AMQP_URL=amqp://user:pass@host:5672/
  - start the local ones (127.0.0.1:5432 and 127.0.0.1:5672): bash .ci/run starts them, then runs make test
  - start them in Docker: go test -tags containers ./... (needs a running Docker engine)`,
		oneLine(e.local), oneLine(e.containers))
}

// oneLine is err's message with line breaks (as errors.Join makes) turned
// into "; ", so that each cause stays on its line of the report.
func oneLine(err error) string {
	return strings.ReplaceAll(strings.TrimSpace(err.Error()), "\n", "; ")
}

// Unwrap returns both underlying errors.
func (e *unreachableError) Unwrap() []error { return []error{e.local, e.containers} }

// probe reports whether Postgres at pgURL and RabbitMQ at amqpURL both
// answer; the error names each service that does not.
func probe(pgURL, amqpURL string) error {
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	var pgErr, amqpErr error
	if conn, err := pgx.Connect(ctx, pgURL); err != nil {
		pgErr = fmt.Errorf("Postgres at %s: %w", redact(pgURL), err)
	} else {
		_ = conn.Close(ctx)
	}
	if conn, _, err := broker.Dial(amqpURL, amqp.Config{Dial: amqp.DefaultDial(probeTimeout)}); err != nil {
		amqpErr = fmt.Errorf("RabbitMQ at %s: %w", redact(amqpURL), err)
	} else {
		_ = conn.Close()
	}
	switch {
	case pgErr != nil && amqpErr != nil:
		return fmt.Errorf("%w; %w", pgErr, amqpErr)
	case pgErr != nil:
		return pgErr
	default:
		return amqpErr
	}
}

// Require fails the test at once when the services are unreachable.
func Require(t testing.TB) {
	t.Helper()
	if err := Check(); err != nil {
		t.Fatal(err)
	}
}

// DB is a test's own Postgres schema.
type DB struct {
	Schema string        // schema name
	URL    string        // base URL plus search_path=Schema
	Pool   *pgxpool.Pool // pool on URL
}

var nonWord = regexp.MustCompile(`[^a-z0-9]+`)

// Name returns a short unique lower-case name for t, usable as a schema name
// or queue prefix.
func Name(t testing.TB) string {
	base := nonWord.ReplaceAllString(strings.ToLower(t.Name()), "_")
	if len(base) > 30 {
		base = base[len(base)-30:]
	}
	return "oc_" + strings.Trim(base, "_") + "_" + randHex(4)
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// NewSchema creates an empty schema for t (no tables) and drops it in
// t.Cleanup.
func NewSchema(t testing.TB) *DB {
	t.Helper()
	Require(t)
	ctx := context.Background()
	name := Name(t)
	u, err := sandbox.WithSearchPath(PGURL(), name)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := pgx.Connect(ctx, PGURL())
	if err != nil {
		t.Fatalf("connect to Postgres: %v", err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatalf("create schema %s: %v", name, err)
	}
	t.Cleanup(func() { DropSchema(t, name) })
	pool, err := pgxpool.New(ctx, u)
	if err != nil {
		t.Fatalf("open pool: %v", err)
	}
	t.Cleanup(pool.Close)
	return &DB{Schema: name, URL: u, Pool: pool}
}

// NewMigratedSchema is NewSchema with every table created.
func NewMigratedSchema(t testing.TB) *DB {
	t.Helper()
	db := NewSchema(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, db.URL)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(ctx)
	if err := schema.Migrate(ctx, conn); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	return db
}

// DropSchema drops a schema and everything in it, logging failures.
func DropSchema(t testing.TB, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := DropSchemaURL(ctx, PGURL(), name); err != nil {
		t.Logf("cleanup: %v", err)
	}
}

// DropSchemaURL drops schema name in the database at url.
func DropSchemaURL(ctx context.Context, url, name string) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return fmt.Errorf("connect to drop schema %s: %w", name, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{name}.Sanitize()+" CASCADE"); err != nil {
		return fmt.Errorf("drop schema %s: %w", name, err)
	}
	return nil
}

// NewPrefix returns a fresh queue-name prefix for t and deletes its queues
// and exchange in t.Cleanup.
func NewPrefix(t testing.TB) string {
	t.Helper()
	Require(t)
	p := Name(t)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := broker.Delete(ctx, AMQPURL(), p); err != nil {
			t.Logf("cleanup: %v", err)
		}
	})
	return p
}

// AMQPChannel opens a connection to AMQPURL and a channel on it, for a test
// to declare or inspect queues; the connection is closed in t.Cleanup.
func AMQPChannel(t testing.TB) *amqp.Channel {
	t.Helper()
	Require(t)
	conn, _, err := broker.Dial(AMQPURL(), amqp.Config{Dial: amqp.DefaultDial(5 * time.Second)})
	if err != nil {
		t.Fatalf("connect to RabbitMQ at %s: %v", redact(AMQPURL()), err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	ch, err := conn.Channel()
	if err != nil {
		t.Fatalf("open an AMQP channel: %v", err)
	}
	return ch
}

func redact(s string) string { return app.Redact(s) }

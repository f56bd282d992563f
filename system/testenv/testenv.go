// Package testenv gives each test its own slice of the shared services: a
// fresh Postgres schema (reached through a URL whose search_path names it,
// so a query that forgets it fails loudly) and a fresh RabbitMQ name prefix.
// Both are removed in t.Cleanup, even when the test fails half-way.
//
// The services default to the local ones (127.0.0.1:5432, 127.0.0.1:5672);
// OUTBOXCHAOS_TEST_PG_URL and OUTBOXCHAOS_TEST_AMQP_URL (or the runtime
// OUTBOXCHAOS_PG_URL / OUTBOXCHAOS_AMQP_URL) point elsewhere. When neither
// answers, Require fails with one message saying how to point at services.
package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/outboxchaos/outboxchaos/system/broker"
	"github.com/outboxchaos/outboxchaos/system/schema"
)

// PGURL returns the base Postgres URL for tests.
func PGURL() string {
	for _, k := range []string{"OUTBOXCHAOS_TEST_PG_URL", "OUTBOXCHAOS_PG_URL"} {
		if v := os.Getenv(k); v != "" {
			return v
		}
	}
	return "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
}

// AMQPURL returns the RabbitMQ URL for tests.
func AMQPURL() string {
	for _, k := range []string{"OUTBOXCHAOS_TEST_AMQP_URL", "OUTBOXCHAOS_AMQP_URL"} {
		if v := os.Getenv(k); v != "" {
			return v
		}
	}
	return "amqp://guest:guest@127.0.0.1:5672/"
}

var (
	reachOnce sync.Once
	reachErr  error
)

// Check reports whether both services answer, with a message that says how
// to point at others.
func Check() error {
	reachOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var problems []string
		if conn, err := pgx.Connect(ctx, PGURL()); err != nil {
			problems = append(problems, fmt.Sprintf("Postgres at %s: %v", redact(PGURL()), err))
		} else {
			_ = conn.Close(ctx)
		}
		if conn, err := amqp.DialConfig(AMQPURL(), amqp.Config{Dial: amqp.DefaultDial(5 * time.Second)}); err != nil {
			problems = append(problems, fmt.Sprintf("RabbitMQ at %s: %v", redact(AMQPURL()), err))
		} else {
			_ = conn.Close()
		}
		if len(problems) > 0 {
			reachErr = fmt.Errorf("test services unreachable: %s. Start them (bash .ci/run starts the local ones) "+
				"or set OUTBOXCHAOS_TEST_PG_URL and OUTBOXCHAOS_TEST_AMQP_URL", strings.Join(problems, "; "))
		}
	})
	return reachErr
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
	u, err := WithSearchPath(PGURL(), name)
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

// WithSearchPath returns base with search_path set to schema.
func WithSearchPath(base, schemaName string) (string, error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", fmt.Errorf("parse Postgres URL: %w", err)
	}
	q := u.Query()
	q.Set("search_path", schemaName)
	u.RawQuery = q.Encode()
	return u.String(), nil
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

func redact(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

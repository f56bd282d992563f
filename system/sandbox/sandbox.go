// Package sandbox owns a scratch slice of the shared services for one run:
// a Postgres schema (reached through a URL whose search_path names it) and
// a fresh RabbitMQ name prefix. New makes a fresh schema, which Close drops;
// a Pool (pool.go) hands out kept, migrated schemas, which Close empties
// and gives back (reset.go). Either way demo and scenario runs leave the
// services as they found them, even after a failure.
package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxchaos/outboxchaos/system/broker"
)

// Sandbox is one schema and one prefix.
type Sandbox struct {
	BaseURL string // Postgres URL without the schema
	AMQPURL string
	Schema  string
	Prefix  string
	PGURL   string // BaseURL with search_path=Schema
	dropped bool
	pool    *Pool // the pool Close gives the schema back to, or nil
	kept    *kept
	// observer is a new schema's Observer pool, closed with it.
	observer *pgxpool.Pool
}

// Observer is a pool on the sandbox's schema for the harness's own
// statements. A kept schema keeps its pool, and the pool its connections,
// from run to run: opening and closing a connection costs PostgreSQL about
// 18 ms of CPU, more than most of a run's statements. A new schema's pool
// closes with the sandbox. The caller does not close it.
func (s *Sandbox) Observer(ctx context.Context) (*pgxpool.Pool, error) {
	if s.kept != nil {
		return s.kept.observer(ctx, s.PGURL)
	}
	if s.observer == nil {
		p, err := openObserver(ctx, s.PGURL)
		if err != nil {
			return nil, err
		}
		s.observer = p
	}
	return s.observer, nil
}

// openObserver opens a pool at u and checks it answers.
func openObserver(ctx context.Context, u string) (*pgxpool.Pool, error) {
	p, err := pgxpool.New(ctx, u)
	if err != nil {
		return nil, fmt.Errorf("open observer pool: %w", err)
	}
	if err := p.Ping(ctx); err != nil {
		p.Close()
		return nil, fmt.Errorf("open observer pool: %w", err)
	}
	return p, nil
}

// Migrated reports whether the schema already has every table: a Pool's
// kept one. A sandbox from New starts empty.
func (s *Sandbox) Migrated() bool { return s.kept != nil }

// New creates schema and prefix named label_<random>.
func New(ctx context.Context, pgURL, amqpURL, label string) (*Sandbox, error) {
	name := randomName(label)
	u, err := WithSearchPath(pgURL, name)
	if err != nil {
		return nil, err
	}
	conn, err := pgx.Connect(ctx, pgURL)
	if err != nil {
		return nil, fmt.Errorf("connect to Postgres to create schema %s: %w", name, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{name}.Sanitize()); err != nil {
		return nil, fmt.Errorf("create schema %s: %w", name, err)
	}
	return &Sandbox{BaseURL: pgURL, AMQPURL: amqpURL, Schema: name, Prefix: name, PGURL: u}, nil
}

// Close deletes the queues and exchange and drops the schema, or gives it
// back to its pool. Safe to call twice.
func (s *Sandbox) Close() error {
	if s == nil || s.dropped {
		return nil
	}
	s.dropped = true
	if s.pool != nil {
		return s.pool.put(s)
	}
	if s.observer != nil {
		s.observer.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return errors.Join(drop(ctx, s.BaseURL, s.Schema), broker.Delete(ctx, s.AMQPURL, s.Prefix))
}

// WithSearchPath returns base with search_path set to schema.
func WithSearchPath(base, schema string) (string, error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", fmt.Errorf("parse Postgres URL: %w", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String(), nil
}

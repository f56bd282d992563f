package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxchaos/outboxchaos/system/broker"
	"github.com/outboxchaos/outboxchaos/system/schema"
)

// PoolSchemaPrefix starts the name of every schema a Pool creates,
// oc_pool_<pid>_<random> (the pid of the process whose pool made it);
// Sweep drops the ones whose process is gone.
const PoolSchemaPrefix = "oc_pool_"

// DefaultPoolIdle is how many reset schemas a Pool keeps for later runs by
// default: enough for every run a budget has at once.
const DefaultPoolIdle = 32

// DefaultReleaseWait bounds how long a returned sandbox waits for the
// backends of its run's pods to end before it is dropped instead of kept.
const DefaultReleaseWait = 5 * time.Second

// Pool keeps migrated schemas between runs. Creating a schema, migrating it
// and dropping it again costs PostgreSQL about 120 ms of CPU (and leaves
// catalog rows for autovacuum); emptying a kept one costs about 3 ms. Get
// hands out a kept schema with a fresh queue prefix, or a new migrated
// one; a sandbox's Close gives its schema back, emptied and checked
// (reset.go), or drops it when it cannot be trusted as new. Close the
// Pool to drop every schema it keeps. A Pool is safe for concurrent use.
type Pool struct {
	// ReleaseWait bounds the wait for a run's sessions to end when its
	// sandbox comes back (DefaultReleaseWait if 0); set it before Get.
	ReleaseWait time.Duration

	base, amqp string
	max        int

	mu     sync.Mutex
	idle   []*kept
	closed bool
	swept  bool
	stats  PoolStats
}

// PoolStats counts what a Pool did.
type PoolStats struct {
	Created int // schemas created and migrated
	Reused  int // runs given a kept schema
	Kept    int // schemas emptied and kept after a run
	Dropped int // schemas dropped: not trusted as new after a run, over the idle limit, or at Close
	Swept   int // schemas of processes gone, dropped by Sweep
	// WhyDropped is why the last schema dropped after a run was not
	// kept.
	WhyDropped string
}

// kept is one pooled schema and what it looked like when it was new.
type kept struct {
	schema string
	layout string // the schema's catalog fingerprint just after migration
	reset  string // the statement that empties it (reset.go)
	tables []string
	resets int // how many times it was emptied
	// conns is the schema's Observer pool, opened by its first run and
	// closed when the schema is dropped; one run at a time uses it.
	conns *pgxpool.Pool
}

// observer is k's Observer pool, opened at u the first time.
func (k *kept) observer(ctx context.Context, u string) (*pgxpool.Pool, error) {
	if k.conns == nil {
		p, err := openObserver(ctx, u)
		if err != nil {
			return nil, err
		}
		k.conns = p
	}
	return k.conns, nil
}

// close closes k's pool, before its schema is dropped.
func (k *kept) close() {
	if k.conns != nil {
		k.conns.Close()
		k.conns = nil
	}
}

// NewPool returns a pool of schemas on the Postgres at pgURL (the base
// URL, without a search_path) and queue prefixes on the broker at amqpURL,
// keeping at most maxIdle schemas between runs (DefaultPoolIdle if <= 0).
func NewPool(pgURL, amqpURL string, maxIdle int) *Pool {
	if maxIdle <= 0 {
		maxIdle = DefaultPoolIdle
	}
	return &Pool{base: pgURL, amqp: amqpURL, max: maxIdle}
}

// Stats returns what the pool did so far.
func (p *Pool) Stats() PoolStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

// Get returns a migrated schema with no rows and a fresh queue prefix
// named label_<random>: a kept one if any, else a new one. It is
// Migrated; its Close gives the schema back to the pool.
func (p *Pool) Get(ctx context.Context, label string) (*Sandbox, error) {
	if err := p.sweepOnce(ctx); err != nil {
		return nil, err
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, errors.New("sandbox pool is closed")
	}
	var k *kept
	if n := len(p.idle); n > 0 {
		k, p.idle = p.idle[n-1], p.idle[:n-1]
		p.stats.Reused++
	}
	p.mu.Unlock()
	if k == nil {
		var err error
		if k, err = p.create(ctx); err != nil {
			return nil, err
		}
	}
	u, err := WithSearchPath(p.base, k.schema)
	if err != nil {
		return nil, err
	}
	return &Sandbox{BaseURL: p.base, AMQPURL: p.amqp, Schema: k.schema, Prefix: randomName(label), PGURL: u,
		pool: p, kept: k}, nil
}

// create makes a new schema, labelled with this process as its owner,
// migrates it and records its layout.
func (p *Pool) create(ctx context.Context) (*kept, error) {
	name := randomName(fmt.Sprintf("%s%d", PoolSchemaPrefix, os.Getpid()))
	u, err := WithSearchPath(p.base, name)
	if err != nil {
		return nil, err
	}
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		return nil, fmt.Errorf("connect to Postgres to create schema %s: %w", name, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	id := pgx.Identifier{name}.Sanitize()
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+id+"; COMMENT ON SCHEMA "+id+" IS "+quote(owner())); err != nil {
		return nil, fmt.Errorf("create schema %s: %w", name, err)
	}
	k, err := prepare(ctx, conn, name)
	if err != nil {
		dropSchema(p.base, name)
		return nil, err
	}
	p.mu.Lock()
	p.stats.Created++
	p.mu.Unlock()
	return k, nil
}

// prepare migrates a new pooled schema on conn (whose search_path names
// it) and records its layout and its reset statement.
func prepare(ctx context.Context, conn *pgx.Conn, name string) (*kept, error) {
	if err := schema.Migrate(ctx, conn); err != nil {
		return nil, fmt.Errorf("migrate schema %s: %w", name, err)
	}
	layout, err := fingerprint(ctx, conn, name)
	if err != nil {
		return nil, err
	}
	reset, tables, err := resetStatement(ctx, conn, name)
	if err != nil {
		return nil, err
	}
	return &kept{schema: name, layout: layout, reset: reset, tables: tables}, nil
}

// put takes a sandbox back after its run: its queues deleted, its schema
// emptied and kept if nothing of the run is left in it, else dropped.
func (p *Pool) put(s *Sandbox) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	qerr := broker.Delete(ctx, s.AMQPURL, s.Prefix)
	why := p.room()
	if why == nil {
		why = renew(ctx, s, p.releaseWait())
	}
	p.mu.Lock()
	if why == nil {
		why = p.roomLocked() // it may have closed or filled meanwhile
	}
	if why == nil {
		p.idle = append(p.idle, s.kept)
		p.stats.Kept++
		p.mu.Unlock()
		return qerr
	}
	p.stats.Dropped++
	p.stats.WhyDropped = why.Error()
	p.mu.Unlock()
	s.kept.close()
	return errors.Join(qerr, drop(ctx, p.base, s.Schema))
}

// Close drops every schema the pool keeps; a sandbox still out is dropped
// when it is closed. Safe to call twice.
func (p *Pool) Close() error {
	p.mu.Lock()
	idle := p.idle
	p.idle, p.closed = nil, true
	p.stats.Dropped += len(idle)
	p.mu.Unlock()
	if len(idle) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var errs []error
	for _, k := range idle {
		k.close()
		errs = append(errs, drop(ctx, p.base, k.schema))
	}
	return errors.Join(errs...)
}

// room says why the pool cannot keep one more schema, or nil.
func (p *Pool) room() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.roomLocked()
}

func (p *Pool) roomLocked() error {
	if p.closed {
		return errors.New("the pool is closed")
	}
	if len(p.idle) >= p.max {
		return fmt.Errorf("the pool keeps %d schemas already", p.max)
	}
	return nil
}

func (p *Pool) releaseWait() time.Duration {
	if p.ReleaseWait > 0 {
		return p.ReleaseWait
	}
	return DefaultReleaseWait
}

// sweepOnce runs Sweep before the pool's first schema.
func (p *Pool) sweepOnce(ctx context.Context) error {
	p.mu.Lock()
	done := p.swept
	p.swept = true
	p.mu.Unlock()
	if done {
		return nil
	}
	n, err := Sweep(ctx, p.base)
	p.mu.Lock()
	p.stats.Swept += n
	p.mu.Unlock()
	return err
}

// randomName is label_<8 random hex digits>.
func randomName(label string) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%s_%s", label, hex.EncodeToString(b))
}

// drop drops one schema with everything in it.
func drop(ctx context.Context, base, name string) error {
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		return fmt.Errorf("connect to drop schema %s: %w", name, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{name}.Sanitize()+" CASCADE"); err != nil {
		return fmt.Errorf("drop schema %s: %w", name, err)
	}
	return nil
}

// dropSchema drops name on a fresh bounded context, for clean-up paths
// whose caller's context may have ended.
func dropSchema(base, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = drop(ctx, base, name)
}

// quote is a SQL string literal.
func quote(s string) string {
	out := []byte{'\''}
	for i := 0; i < len(s); i++ {
		if s[i] == '\'' {
			out = append(out, '\'')
		}
		out = append(out, s[i])
	}
	return string(append(out, '\''))
}

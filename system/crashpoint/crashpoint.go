// Package crashpoint makes every externally visible step of a process a
// crash point, without anyone placing one: each SQL statement and each
// commit (a pgx tracer, see Tracer), each publish and confirm and each ack,
// nack and reject (the publisher and the worker's Acknowledger wrapper, see
// Acker), each vendor call and each alert post (an http.RoundTripper
// wrapper, see Transport). A step has a stable name — "sql:update-1a2b3c"
// (the statement's verb and a hash of its text), "sql:commit",
// "amqp:publish-send", "amqp:confirm", "amqp:ack", "http:vendor-message",
// "http:alert" — and two sides, before and after. A point is a step, a
// side and the Nth time the process reached that side of that step:
//
//	OUTBOXCHAOS_CRASHPOINT=sql:update-1a2b3c:after:2   # die right after the 2nd such UPDATE returned
//	OUTBOXCHAOS_CRASHPOINT_TRACE=/tmp/x/relay.trace    # discovery: append each point reached (first hits)
//
// An armed process dies on its point as a kill-point does (SIGKILL, after
// writing "KILLPOINT <step>:<side> hit <n>" to stderr, so a harness reads
// it like any kill-point). Discovery appends "<step>:<side> <n>" for the
// first TraceBound hits of every point to the trace file, with O_APPEND, so
// the list survives a kill. With neither variable set a step costs one
// atomic load.
package crashpoint

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
)

// EnvVar arms one crash point: "<step>:<side>:<hit>".
const EnvVar = "OUTBOXCHAOS_CRASHPOINT"

// TraceEnvVar names a file discovery appends the points reached to.
const TraceEnvVar = "OUTBOXCHAOS_CRASHPOINT_TRACE"

// TraceBound is how many hits of each point discovery records.
const TraceBound = 8

// Side is before or after a step.
type Side string

// The two sides of a step.
const (
	Before Side = "before"
	After  Side = "after"
)

// Point is one crash point: a step, a side and the hit that dies.
type Point struct {
	Step string
	Side Side
	Hit  int
}

// String is "<step>:<side>:<hit>", the form EnvVar takes.
func (p Point) String() string { return fmt.Sprintf("%s:%s:%d", p.Step, p.Side, p.Hit) }

// Name is "<step>:<side>", the name a kill line carries.
func (p Point) Name() string { return p.Step + ":" + string(p.Side) }

// ParsePoint reads "<step>:<side>:<hit>"; a step is "<kind>:<label>" with
// kind sql, amqp or http.
func ParsePoint(s string) (Point, error) {
	parts := strings.Split(strings.TrimSpace(s), ":")
	if len(parts) != 4 {
		return Point{}, fmt.Errorf("crash point %q: want <kind>:<label>:<before|after>:<hit>", s)
	}
	switch parts[0] {
	case "sql", "amqp", "http":
	default:
		return Point{}, fmt.Errorf("crash point %q: kind %q (known: sql, amqp, http)", s, parts[0])
	}
	if parts[1] == "" {
		return Point{}, fmt.Errorf("crash point %q: empty label", s)
	}
	side := Side(parts[2])
	if side != Before && side != After {
		return Point{}, fmt.Errorf("crash point %q: side %q (want before or after)", s, parts[2])
	}
	hit, err := strconv.Atoi(parts[3])
	if err != nil || hit < 1 {
		return Point{}, fmt.Errorf("crash point %q: hit must be a positive integer", s)
	}
	return Point{Step: parts[0] + ":" + parts[1], Side: side, Hit: hit}, nil
}

// state is what the process was armed with.
type state struct {
	mu    sync.Mutex
	armed *Point
	trace *os.File
	hits  map[string]int // "<step>:<side>" → hits so far
}

var (
	on  atomic.Bool // anything armed or tracing
	cur state
	// quiet > 0 holds crash points off (see Quiet).
	quiet atomic.Int32
)

// die kills the process; tests replace it.
var die = func() { _ = syscall.Kill(os.Getpid(), syscall.SIGKILL); select {} }

// ArmFromEnv arms the point of EnvVar and opens the trace file of
// TraceEnvVar (unset or empty: neither). The process entry point calls it
// once at start-up.
func ArmFromEnv() error {
	var p *Point
	if s := os.Getenv(EnvVar); strings.TrimSpace(s) != "" {
		pt, err := ParsePoint(s)
		if err != nil {
			return fmt.Errorf("%s: %w", EnvVar, err)
		}
		p = &pt
	}
	var f *os.File
	if path := os.Getenv(TraceEnvVar); path != "" {
		var err error
		if f, err = os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
			return fmt.Errorf("%s: %w", TraceEnvVar, err)
		}
	}
	arm(p, f)
	return nil
}

// Arm arms p (nil: none) and no trace (tests).
func Arm(p *Point) { arm(p, nil) }

// Disarm disarms everything and forgets every hit (tests).
func Disarm() { arm(nil, nil) }

func arm(p *Point, f *os.File) {
	cur.mu.Lock()
	defer cur.mu.Unlock()
	if cur.trace != nil {
		_ = cur.trace.Close()
	}
	cur.armed, cur.trace, cur.hits = p, f, map[string]int{}
	on.Store(p != nil || f != nil)
}

// Quiet holds every crash point off until the returned func is called: for
// a process's fixtures that are no part of the pipeline (the enqueue
// command's seed data).
func Quiet() (resume func()) {
	quiet.Add(1)
	return func() { quiet.Add(-1) }
}

// Reach marks that the process reached side of step: it records the hit
// for discovery, and dies if this is the armed point.
func Reach(step string, side Side) {
	if !on.Load() || quiet.Load() > 0 {
		return
	}
	name := step + ":" + string(side)
	cur.mu.Lock()
	cur.hits[name]++
	n := cur.hits[name]
	if cur.trace != nil && n <= TraceBound {
		_, _ = fmt.Fprintf(cur.trace, "%s %d\n", name, n)
	}
	fire := cur.armed != nil && cur.armed.Name() == name && cur.armed.Hit == n
	cur.mu.Unlock()
	if fire {
		fmt.Fprintf(os.Stderr, "KILLPOINT %s hit %d\n", name, n)
		die()
	}
}

// Enabled reports whether anything is armed (a wrapper may skip its work).
func Enabled() bool { return on.Load() }

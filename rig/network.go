package rig

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand"
	"os"
	"sync"
	"sync/atomic"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/Shopify/toxiproxy/v2/toxics"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// DebugEnvVar, when set to a non-empty value, sends Toxiproxy's own log
// output to stderr instead of discarding it.
const DebugEnvVar = "OUTBOXCHAOS_TOXIPROXY_DEBUG"

// Direction is the stream a network fault acts on.
type Direction string

// The two streams of a proxied connection.
const (
	// Upstream is the data the client (a pod) sends to the server.
	Upstream Direction = "upstream"
	// Downstream is the data the server sends back to the client.
	Downstream Direction = "downstream"
)

// Validate reports whether d is Upstream or Downstream.
func (d Direction) Validate() error {
	if d != Upstream && d != Downstream {
		return fmt.Errorf("direction %q: want %q or %q", string(d), Upstream, Downstream)
	}
	return nil
}

// Network is a Toxiproxy server embedded in the harness process. It owns the
// proxies between the pods and the services they use, and the seeded random
// source for fault parameters (see the package doc). It is safe for
// concurrent use.
type Network struct {
	seed   int64
	id     string
	server *toxiproxy.ApiServer

	mu      sync.Mutex
	rng     *rand.Rand
	proxies map[string]*Proxy
	closed  bool
	tl      *Timeline
}

var networkSeq atomic.Int64

// NewNetwork returns an embedded Toxiproxy server with no proxies. seed fixes
// every random fault parameter drawn by this Network.
func NewNetwork(seed int64) *Network {
	logger := zerolog.Nop()
	if os.Getenv(DebugEnvVar) != "" {
		logger = zerolog.New(zerolog.ConsoleWriter{Out: os.Stderr}).With().Timestamp().Logger()
	}
	return &Network{
		seed:    seed,
		id:      fmt.Sprintf("net%d", networkSeq.Add(1)),
		server:  toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), logger),
		rng:     rand.New(rand.NewSource(seed)),
		proxies: make(map[string]*Proxy),
	}
}

// Seed returns the seed the Network was created with.
func (n *Network) Seed() int64 { return n.seed }

// SetTimeline makes every fault injected or removed from now on appear on tl
// (source "faults"). A nil tl stops it.
func (n *Network) SetTimeline(tl *Timeline) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.tl = tl
}

func (n *Network) timeline() *Timeline {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.tl
}

// jitterMillis draws an offset in [-jitter, +jitter) milliseconds from the
// seeded source.
func (n *Network) jitterMillis(jitter int64) int64 {
	if jitter <= 0 {
		return 0
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.rng.Int63n(2*jitter) - jitter
}

// Proxy starts a proxy named name (unique in this Network) that listens on
// 127.0.0.1 at a random port and relays every connection to upstream
// ("host:port", dialled anew for each connection). It returns once the port
// accepts connections.
func (n *Network) Proxy(name, upstream string) (*Proxy, error) {
	if name == "" || upstream == "" {
		return nil, errors.New("network proxy: name and upstream are required")
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil, fmt.Errorf("network proxy %s: network is closed", name)
	}
	if _, dup := n.proxies[name]; dup {
		return nil, fmt.Errorf("network proxy %s: name already in use", name)
	}
	p := &Proxy{
		net:      n,
		name:     name,
		upstream: upstream,
		tp:       toxiproxy.NewProxy(n.server, name, "127.0.0.1:0", upstream),
		counters: map[Direction]*flowCounter{Upstream: {}, Downstream: {}},
		gates:    map[Direction]*gate{Upstream: newGate(), Downstream: newGate()},
		active:   make(map[*Toxic]struct{}),
	}
	// The counting toxics go in before any connection exists, so they sit
	// first in both chains and see every connection (see countToxic); the
	// gates follow them, and no toxic is added or removed after (see gate).
	for _, dir := range []Direction{Upstream, Downstream} {
		id := fmt.Sprintf("%s/%s/%s", n.id, name, dir)
		counters.Store(id, p.counters[dir])
		gates.Store(id, p.gates[dir])
		p.ids = append(p.ids, id)
		if _, err := p.addToxic(countToxicType+"_"+string(dir), countToxicType, dir, countToxic{Counter: id}); err != nil {
			p.unregister()
			return nil, fmt.Errorf("network proxy %s: add byte counter: %w", name, err)
		}
		if _, err := p.addToxic(gateToxicType+"_"+string(dir), gateToxicType, dir, gateToxic{Gate: id}); err != nil {
			p.unregister()
			return nil, fmt.Errorf("network proxy %s: add fault gate: %w", name, err)
		}
	}
	if err := p.tp.Start(); err != nil {
		p.unregister()
		return nil, fmt.Errorf("network proxy %s: listen on 127.0.0.1: %w", name, err)
	}
	// Start recorded the bound address; later Starts rebind the same one.
	p.addr = p.tp.Listen
	p.running = true
	n.proxies[name] = p
	slog.Debug("network proxy started", "proxy", name, "addr", p.addr, "upstream", upstream)
	return p, nil
}

// Close stops every proxy, cutting their connections, and ends every fault
// still active. The Network cannot be used afterwards.
func (n *Network) Close() {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return
	}
	n.closed = true
	proxies := make([]*Proxy, 0, len(n.proxies))
	for _, p := range n.proxies {
		proxies = append(proxies, p)
	}
	n.mu.Unlock()
	for _, p := range proxies {
		p.close()
	}
}

// Proxy is one listening port of the Network, relaying to one upstream.
type Proxy struct {
	net      *Network
	name     string
	upstream string
	addr     string
	tp       *toxiproxy.Proxy
	counters map[Direction]*flowCounter // read-only after creation
	gates    map[Direction]*gate        // read-only after creation
	ids      []string                   // the counters' and gates' ids

	mu       sync.Mutex
	running  bool
	closed   bool
	downedBy *Toxic
	active   map[*Toxic]struct{}
	// release frees the port a down proxy holds (holdPort), or is nil.
	release func()
}

// Name returns the proxy's name.
func (p *Proxy) Name() string { return p.name }

// Addr returns the "127.0.0.1:PORT" clients dial. It does not change across
// Down and Up.
func (p *Proxy) Addr() string { return p.addr }

// Upstream returns the address the proxy relays to.
func (p *Proxy) Upstream() string { return p.upstream }

// BytesThrough returns the bytes read so far from either side of every
// connection through the proxy, counted as they arrive (before any fault
// acts on them).
func (p *Proxy) BytesThrough() int64 {
	return p.counters[Upstream].bytes.Load() + p.counters[Downstream].bytes.Load()
}

// Messages returns the protocol messages of kind m read so far from dir's
// side of every connection through the proxy, counted as they arrive
// (before any fault acts on them): what the harness sees a pod ask for on
// its link, whatever language the pod is written in.
func (p *Proxy) Messages(dir Direction, m Message) int64 {
	return p.counters[dir].messages.get(m)
}

// openConns returns the connections currently relayed.
func (p *Proxy) openConns() int64 {
	return max(p.counters[Upstream].open(), p.counters[Downstream].open())
}

// Latency delays the data of stream by latency. A non-zero jitter adds one
// offset in [-jitter, +jitter) drawn from the Network's seeded source for
// this fault (the effective delay is in Toxic.Detail). Durations are rounded
// down to milliseconds.
func (p *Proxy) Latency(ctx context.Context, stream Direction, latency, jitter time.Duration) (*Toxic, error) {
	if latency < 0 || jitter < 0 {
		return nil, fmt.Errorf("latency on %s: latency and jitter must not be negative", p.name)
	}
	ms := latency.Milliseconds()
	jms := jitter.Milliseconds()
	eff := max(ms+p.net.jitterMillis(jms), 0)
	detail := fmt.Sprintf("stream=%s latency=%dms jitter=%dms effective=%dms", stream, ms, jms, eff)
	return p.inject(ctx, "latency", stream, &gateFault{latency: time.Duration(eff) * time.Millisecond}, detail)
}

// Timeout stalls stream: data is dropped, nothing is delivered, and the
// connection is closed after `after` (0: never). Removing the fault closes
// the connections it stalled, as Toxiproxy's timeout toxic does.
func (p *Proxy) Timeout(ctx context.Context, stream Direction, after time.Duration) (*Toxic, error) {
	if after < 0 {
		return nil, fmt.Errorf("timeout on %s: after must not be negative", p.name)
	}
	detail := fmt.Sprintf("stream=%s close_after=%s", stream, closeAfter(after))
	return p.inject(ctx, "timeout", stream, &gateFault{stall: true, closeAfter: after.Truncate(time.Millisecond)}, detail)
}

// Down stops the proxy: its port refuses connections and every open
// connection through it is cut. The fault fired if at least one connection
// was open (and so was cut); dials refused while down cannot be observed.
// Bring it back with Toxic.Remove, Up or Heal.
func (p *Proxy) Down() (*Toxic, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, fmt.Errorf("down %s: network is closed", p.name)
	}
	if !p.running {
		p.mu.Unlock()
		return nil, fmt.Errorf("down %s: already down", p.name)
	}
	open := p.openConns()
	p.tp.Stop()
	p.running = false
	// Keep the port while down; without the hold, Up still listens
	// again on it if it is free, as before.
	if release, err := holdPort(p.addr); err == nil {
		p.release = release
	}
	f := p.newFault("down", fmt.Sprintf("cut %d open connections", open))
	f.firedNow = func() bool { return open > 0 }
	f.remove = p.Up
	p.downedBy = f
	p.active[f] = struct{}{}
	p.mu.Unlock()
	f.announce()
	return f, nil
}

// Up starts a stopped proxy again on the same port and ends the Down fault.
// It is a no-op on a running proxy.
func (p *Proxy) Up() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return fmt.Errorf("up %s: network is closed", p.name)
	}
	if p.running {
		p.mu.Unlock()
		return nil
	}
	p.releasePort()
	// Go listeners set SO_REUSEADDR, so connections left in TIME_WAIT do not
	// block the port; retry briefly in case something else holds it.
	err := WaitFor(context.Background(), 2*time.Second, "proxy "+p.name+" to listen on "+p.addr,
		func(context.Context) (bool, error) {
			err := p.tp.Start()
			if errors.Is(err, toxiproxy.ErrProxyAlreadyStarted) {
				return true, nil
			}
			return err == nil, err
		})
	if err != nil {
		p.mu.Unlock()
		return fmt.Errorf("up %s: %w", p.name, err)
	}
	p.running = true
	f := p.downedBy
	p.downedBy = nil
	p.mu.Unlock()
	if f != nil {
		f.finish()
	}
	return nil
}

// Heal ends every fault on the proxy and brings it Up. The
// internal byte counters stay.
func (p *Proxy) Heal() error {
	p.mu.Lock()
	faults := make([]*Toxic, 0, len(p.active))
	for f := range p.active {
		if f != p.downedBy {
			faults = append(faults, f)
		}
	}
	p.mu.Unlock()
	var errs []error
	for _, f := range faults {
		if err := f.Remove(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := p.Up(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("heal %s: %w", p.name, err)
	}
	return nil
}

// inject puts a fault on stream's gate and returns its Toxic.
func (p *Proxy) inject(ctx context.Context, kind string, stream Direction, gf *gateFault, detail string) (*Toxic, error) {
	if err := stream.Validate(); err != nil {
		return nil, fmt.Errorf("%s on %s: %w", kind, p.name, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%s on %s: %w", kind, p.name, err)
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, fmt.Errorf("%s on %s: network is closed", kind, p.name)
	}
	counter, g := p.counters[stream], p.gates[stream]
	// Baseline before the gate changes: bytes counted from now on reached
	// it, or were on their way through it.
	base := counter.bytes.Load()
	g.add(gf)
	f := p.newFault(kind, detail)
	f.firedNow = func() bool { return counter.bytes.Load() > base }
	f.remove = func() error {
		g.remove(gf)
		return nil
	}
	p.active[f] = struct{}{}
	p.mu.Unlock()
	f.announce()
	return f, nil
}

// addToxic adds a toxic with toxicity 1.0 (it always applies; see the
// package doc on determinism).
func (p *Proxy) addToxic(name, typ string, stream Direction, attrs any) (*toxics.ToxicWrapper, error) {
	body, err := json.Marshal(struct {
		Name       string  `json:"name"`
		Type       string  `json:"type"`
		Stream     string  `json:"stream"`
		Toxicity   float32 `json:"toxicity"`
		Attributes any     `json:"attributes"`
	}{name, typ, string(stream), 1.0, attrs})
	if err != nil {
		return nil, fmt.Errorf("encode toxic %s: %w", name, err)
	}
	w, err := p.tp.Toxics.AddToxicJson(bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("add toxic %s: %w", name, err)
	}
	return w, nil
}

func (p *Proxy) newFault(kind, detail string) *Toxic {
	return &Toxic{Kind: kind, Target: p.name, Detail: detail, Start: time.Now(), proxy: p}
}

func (p *Proxy) forget(f *Toxic) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.active, f)
}

// unregister drops the proxy's counters and gates from the registries, and
// closes the gates, so that no connection waits on one.
func (p *Proxy) unregister() {
	for _, id := range p.ids {
		counters.Delete(id)
		gates.Delete(id)
	}
	for _, g := range p.gates {
		g.close()
	}
}

func (p *Proxy) close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	p.running = false
	p.tp.Stop()
	p.releasePort()
	faults := make([]*Toxic, 0, len(p.active))
	for f := range p.active {
		faults = append(faults, f)
	}
	p.downedBy = nil
	p.mu.Unlock()
	for _, f := range faults {
		f.finish()
	}
	p.unregister()
}

func closeAfter(d time.Duration) string {
	if d == 0 {
		return "never"
	}
	return d.String()
}

// releasePort frees the port a down proxy holds; p.mu is held.
func (p *Proxy) releasePort() {
	if p.release != nil {
		p.release()
		p.release = nil
	}
}

package rig

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/Shopify/toxiproxy/v2/stream"
	"github.com/Shopify/toxiproxy/v2/toxics"
)

// gateToxicType is the registered type of the toxic that carries a
// proxy's latency and stall faults.
const gateToxicType = "outboxchaos_gate"

// gates maps a gateToxic's Gate id to its gate, as counters does for the
// counting toxic.
var gates sync.Map // string → *gate

// A gate is the fault state of one stream of a proxy. Its toxic sits in
// every connection's chain from the proxy's start, and a fault changes the
// gate, never the chain: Toxiproxy's own add and remove of a toxic take
// its collection's lock and wait for the toxic to let go of a chunk, and a
// latency toxic holding one for a connection whose client is gone waits for
// a writer that itself waits for that lock, and the proxy never answers
// again. Nothing here takes that lock, so injecting or ending a fault never
// waits on a connection.
type gate struct {
	done  chan struct{}             // closed when the proxy closes
	state atomic.Pointer[gateState] // replaced, never changed, at each change

	mu     sync.Mutex
	faults map[*gateFault]struct{}
	closed bool
}

// gateFault is one fault on a gate: a latency, or a stall that drops
// the stream's data and, with closeAfter, closes each connection that
// long after meeting it. A connection that met a stall closes when the
// stall ends, as Toxiproxy's timeout toxic closes its connections when
// it is removed: data dropped mid-stream leaves nothing a peer could
// read on.
type gateFault struct {
	latency    time.Duration
	stall      bool
	closeAfter time.Duration
}

// gateState is the faults on a gate at one moment; changed is closed when
// they change.
type gateState struct {
	latency time.Duration // the sum of the latencies, as chained toxics add up
	stalls  []*gateFault
	active  map[*gateFault]struct{}
	changed chan struct{}
}

func newGate() *gate {
	g := &gate{done: make(chan struct{}), faults: make(map[*gateFault]struct{})}
	g.state.Store(&gateState{changed: make(chan struct{})})
	return g
}

func lookupGate(id string) *gate {
	if g, ok := gates.Load(id); ok {
		return g.(*gate)
	}
	g := newGate() // the proxy is gone: a closed gate lets the chain end
	g.close()
	return g
}

// add puts f on the gate.
func (g *gate) add(f *gateFault) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.faults[f] = struct{}{}
	g.publishLocked()
}

// remove takes f off the gate; removing twice is a no-op.
func (g *gate) remove(f *gateFault) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, ok := g.faults[f]; ok {
		delete(g.faults, f)
		g.publishLocked()
	}
}

// close ends every connection's wait on the gate.
func (g *gate) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.closed {
		g.closed = true
		close(g.done)
	}
}

// publishLocked makes the faults the state every connection reads, and
// wakes the connections waiting on the old one.
func (g *gate) publishLocked() {
	s := &gateState{active: make(map[*gateFault]struct{}, len(g.faults)), changed: make(chan struct{})}
	for f := range g.faults {
		s.active[f] = struct{}{}
		if f.stall {
			s.stalls = append(s.stalls, f)
		} else {
			s.latency += f.latency
		}
	}
	old := g.state.Swap(s)
	close(old.changed)
}

// look is the gate's state now; it allocates nothing, as every chunk of
// every connection looks.
func (g *gate) look() *gateState { return g.state.Load() }

// gateToxic applies its gate's faults to one connection's stream.
type gateToxic struct {
	Gate string `json:"gate"`
}

// gateConn is one connection's view of its gate: the stalls it met and when.
type gateConn struct {
	g   *gate
	met map[*gateFault]time.Time
}

// Pipe relays chunks in order, holding each for the gate's latency and
// dropping it while a stall is on. It returns when the stream ends, the
// proxy closes, or a stall this connection met ends or runs out, which
// closes the connection.
func (t *gateToxic) Pipe(stub *toxics.ToxicStub) {
	l := gateConn{g: lookupGate(t.Gate), met: make(map[*gateFault]time.Time)}
	for {
		s := l.g.look()
		closeIn, ok := l.meet(s)
		if !ok {
			l.shut(stub)
			return
		}
		if !l.next(stub, s, closeIn) {
			return
		}
	}
}

// next waits for one thing to happen to the connection and handles it:
// a chunk, a change to the gate, or a met stall's close; false means the
// stream is over.
func (l *gateConn) next(stub *toxics.ToxicStub, s *gateState, closeIn time.Duration) bool {
	var timeout <-chan time.Time
	if closeIn > 0 {
		timer := time.NewTimer(closeIn)
		defer timer.Stop()
		timeout = timer.C
	}
	select {
	case <-stub.Interrupt:
		return false
	case <-l.g.done:
		l.shut(stub)
		return false
	case <-s.changed:
	case <-timeout:
	case c := <-stub.Input:
		if c == nil {
			stub.Close()
			return false
		}
		if !l.pass(stub, c) {
			l.shut(stub)
			return false
		}
	}
	return true
}

// meet records the stalls on now and says how long until the first of
// them closes the connection (0: none will); false means one met before
// has ended or run out, so the connection closes.
func (l *gateConn) meet(s *gateState) (time.Duration, bool) {
	if len(s.stalls) == 0 && len(l.met) == 0 {
		return 0, true
	}
	now := time.Now()
	for _, f := range s.stalls {
		if _, ok := l.met[f]; !ok {
			l.met[f] = now
		}
	}
	var first time.Duration
	for f, at := range l.met {
		if _, on := s.active[f]; !on {
			return 0, false
		}
		if f.closeAfter <= 0 {
			continue
		}
		left := f.closeAfter - now.Sub(at)
		if left <= 0 {
			return 0, false
		}
		if first == 0 || left < first {
			first = left
		}
	}
	return first, true
}

// pass holds c until its latency has passed since it was read, then
// forwards it, or drops it if a stall is on by then; a change to the gate
// while it waits is read at once (a latency that ends releases c). It
// reports false when the connection must close.
func (l *gateConn) pass(stub *toxics.ToxicStub, c *stream.StreamChunk) bool {
	for {
		s := l.g.look()
		if _, ok := l.meet(s); !ok {
			return false
		}
		if len(s.stalls) > 0 {
			return true // dropped
		}
		wait := time.Until(c.Timestamp.Add(s.latency))
		if wait <= 0 {
			break
		}
		timer := time.NewTimer(wait)
		select {
		case <-timer.C:
		case <-s.changed:
			timer.Stop()
		case <-l.g.done:
			timer.Stop()
			return false
		}
	}
	select {
	case stub.Output <- c:
		return true
	case <-l.g.done:
		return false
	}
}

// shut closes the connection's stream and reads what still comes in until
// it ends, so the toxics before this one are not left blocked on it.
func (l *gateConn) shut(stub *toxics.ToxicStub) {
	stub.Close()
	for {
		select {
		case <-stub.Interrupt:
			return
		case c := <-stub.Input:
			if c == nil {
				return
			}
		}
	}
}

func init() {
	toxics.Register(gateToxicType, new(gateToxic))
}

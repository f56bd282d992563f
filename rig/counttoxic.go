package rig

import (
	"sync"
	"sync/atomic"

	"github.com/Shopify/toxiproxy/v2/toxics"
)

// countToxicType is the registered type of the pass-through counting toxic.
const countToxicType = "outboxchaos_count"

// counters maps a countToxic's Counter id to its flowCounter. Toxiproxy builds
// toxics from JSON, so the id is how a toxic finds its Proxy's counter.
var counters sync.Map // string → *flowCounter

// flowCounter counts one direction of a proxy: bytes read, links (one per
// connection) opened and closed, and the protocol messages read.
type flowCounter struct {
	bytes    atomic.Int64
	opened   atomic.Int64
	closed   atomic.Int64
	messages messageCounts
}

func (c *flowCounter) open() int64 { return c.opened.Load() - c.closed.Load() }

func lookupCounter(id string) *flowCounter {
	if c, ok := counters.Load(id); ok {
		return c.(*flowCounter)
	}
	return new(flowCounter) // the proxy is gone; count into the void
}

// countToxic passes data through unchanged, counting bytes, connections
// and protocol messages (see frameReader).
type countToxic struct {
	Counter string `json:"counter"`
}

// NewState is called once per connection for toxics present when it opens.
func (t *countToxic) NewState() any {
	lookupCounter(t.Counter).opened.Add(1)
	return new(frameReader)
}

// Pipe relays chunks like Toxiproxy's noop toxic, counting them.
func (t *countToxic) Pipe(stub *toxics.ToxicStub) {
	c := lookupCounter(t.Counter)
	frames, _ := stub.State.(*frameReader)
	for {
		select {
		case <-stub.Interrupt:
			return
		case chunk := <-stub.Input:
			if chunk == nil {
				c.closed.Add(1)
				stub.Close()
				return
			}
			c.bytes.Add(int64(len(chunk.Data)))
			if frames != nil {
				frames.feed(chunk.Data, c.messages.add)
			}
			stub.Output <- chunk
		}
	}
}

func init() {
	toxics.Register(countToxicType, new(countToxic))
}

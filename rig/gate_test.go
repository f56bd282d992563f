package rig

import (
	"context"
	"errors"
	"io"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/Shopify/toxiproxy/v2/toxics"
)

// chain is the names of the toxics in the proxy's chains.
func chain(p *Proxy) []string {
	var out []string
	for _, tx := range p.tp.Toxics.GetToxicArray() {
		out = append(out, tx.(*toxics.ToxicWrapper).Name)
	}
	slices.Sort(out)
	return out
}

// Toxiproxy's add and remove of a toxic wait, under its collection's
// lock, for every connection's toxics to let go of a chunk; a connection
// whose client is gone never does. A fault must change the gate only.
func TestFaultsLeaveTheChainAlone(t *testing.T) {
	t.Parallel()
	b := setupNet(t)
	before := chain(b.proxy)
	if len(before) != 4 {
		t.Fatalf("chain = %v, want a counter and a gate in each direction", before)
	}
	c := dial(t, b.proxy.Addr())
	mustRoundTrip(t, c, "open")
	var fs []*Toxic
	for _, dir := range []Direction{Upstream, Downstream} {
		lat, err := b.proxy.Latency(t.Context(), dir, time.Millisecond, 0)
		if err != nil {
			t.Fatal(err)
		}
		stall, err := b.proxy.Timeout(t.Context(), dir, 0)
		if err != nil {
			t.Fatal(err)
		}
		fs = append(fs, lat, stall)
	}
	if got := chain(b.proxy); !slices.Equal(got, before) {
		t.Errorf("chain with faults on = %v, want %v", got, before)
	}
	for _, f := range fs {
		if err := f.Remove(); err != nil {
			t.Fatal(err)
		}
	}
	if got := chain(b.proxy); !slices.Equal(got, before) {
		t.Errorf("chain after the faults = %v, want %v", got, before)
	}
}

// holding waits until the proxy's downstream counter has read more than
// base bytes: the echo's reply is then at the gate or past it.
func holding(t *testing.T, p *Proxy, base int64) {
	t.Helper()
	err := WaitFor(t.Context(), 10*time.Second, "the reply to reach the gate", func(context.Context) (bool, error) {
		return p.counters[Downstream].bytes.Load() > base, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestLatencyEndReleasesHeldData(t *testing.T) {
	t.Parallel()
	b := setupNet(t)
	c := dial(t, b.proxy.Addr())
	mustRoundTrip(t, c, "open")
	lat, err := b.proxy.Latency(t.Context(), Downstream, time.Hour, 0)
	if err != nil {
		t.Fatal(err)
	}
	base := b.proxy.counters[Downstream].bytes.Load()
	if _, err := io.WriteString(c, "held"); err != nil {
		t.Fatal(err)
	}
	holding(t, b.proxy, base)
	if err := lat.Remove(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4)
	if err := c.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "held" {
		t.Fatalf("read after the latency ended: %q, %v; want the held reply", buf, err)
	}
	mustRoundTrip(t, c, "after")
}

func TestStallEndClosesItsConnections(t *testing.T) {
	t.Parallel()
	b := setupNet(t)
	c := dial(t, b.proxy.Addr())
	mustRoundTrip(t, c, "open")
	stall, err := b.proxy.Timeout(t.Context(), Downstream, 0)
	if err != nil {
		t.Fatal(err)
	}
	base := b.proxy.counters[Downstream].bytes.Load()
	if _, err := io.WriteString(c, "dropped"); err != nil {
		t.Fatal(err)
	}
	holding(t, b.proxy, base)
	if err := stall.Remove(); err != nil {
		t.Fatal(err)
	}
	if err := c.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(c)
	if err != nil && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("read after the stall ended: %q, %v; want the connection closed", got, err)
	}
	if len(got) != 0 {
		t.Errorf("read %q after the stall ended, want nothing: the stall dropped it", got)
	}
	mustRoundTrip(t, dial(t, b.proxy.Addr()), "new")
}

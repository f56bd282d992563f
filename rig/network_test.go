package rig

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"
)

// netBundle is one Network with one proxy in front of a TCP echo server.
type netBundle struct {
	net   *Network
	proxy *Proxy
	echo  string
}

func setupNet(t *testing.T) netBundle {
	t.Helper()
	echo := startEcho(t)
	n := NewNetwork(1)
	t.Cleanup(n.Close)
	p, err := n.Proxy("echo", echo)
	if err != nil {
		t.Fatalf("Proxy: %v", err)
	}
	return netBundle{net: n, proxy: p, echo: echo}
}

// startEcho serves a TCP echo on 127.0.0.1 until the test ends.
func startEcho(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer func() { _ = c.Close() }()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().String()
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// roundTrip writes msg and reads it back, returning how long it took.
func roundTrip(c net.Conn, msg string, deadline time.Duration) (time.Duration, error) {
	start := time.Now()
	if err := c.SetDeadline(start.Add(deadline)); err != nil {
		return 0, err
	}
	if _, err := io.WriteString(c, msg); err != nil {
		return 0, err
	}
	buf := make([]byte, len(msg))
	if _, err := io.ReadFull(c, buf); err != nil {
		return 0, err
	}
	if string(buf) != msg {
		return 0, errors.New("echo returned " + string(buf))
	}
	return time.Since(start), nil
}

func mustRoundTrip(t *testing.T, c net.Conn, msg string) time.Duration {
	t.Helper()
	d, err := roundTrip(c, msg, 5*time.Second)
	if err != nil {
		t.Fatalf("round trip: %v", err)
	}
	return d
}

func TestLatencyDelaysRoundTrip(t *testing.T) {
	t.Parallel()
	for _, dir := range []Direction{Upstream, Downstream} {
		t.Run(string(dir), func(t *testing.T) {
			t.Parallel()
			b := setupNet(t)
			const latency = 150 * time.Millisecond
			f, err := b.proxy.Latency(t.Context(), dir, latency, 0)
			if err != nil {
				t.Fatalf("Latency: %v", err)
			}
			c := dial(t, b.proxy.Addr())
			if d := mustRoundTrip(t, c, "ping"); d < latency {
				t.Errorf("round trip took %s, want at least %s", d, latency)
			}
			if err := f.Remove(); err != nil {
				t.Fatalf("Remove: %v", err)
			}
			if !f.Fired() {
				t.Error("Fired() = false after traffic passed the latency")
			}
		})
	}
}

func TestLatencyJitterIsDrawnFromSeed(t *testing.T) {
	t.Parallel()
	details := func(seed int64) []string {
		n := NewNetwork(seed)
		defer n.Close()
		p, err := n.Proxy("p", "127.0.0.1:1")
		if err != nil {
			t.Fatalf("Proxy: %v", err)
		}
		var out []string
		var prev time.Duration
		for range 5 {
			f, err := p.Latency(t.Context(), Downstream, 100*time.Millisecond, 50*time.Millisecond)
			if err != nil {
				t.Fatalf("Latency: %v", err)
			}
			out = append(out, f.Detail)
			// The gate really carries the drawn value.
			total := p.gates[Downstream].look().latency
			drawn := total - prev
			prev = total
			if drawn < 50*time.Millisecond || drawn >= 150*time.Millisecond || !strings.HasSuffix(f.Detail, fmt.Sprintf("effective=%dms", drawn.Milliseconds())) {
				t.Errorf("gate latency grew by %s for %s, want the effective value in [50,150) ms", drawn, f.Detail)
			}
		}
		return out
	}
	a, b, c := details(42), details(42), details(43)
	for i := range a {
		if a[i] != b[i] {
			t.Errorf("seed 42 draw %d: %q then %q, want equal", i, a[i], b[i])
		}
	}
	if equalStrings(a, c) {
		t.Errorf("seeds 42 and 43 drew the same latencies %q", a)
	}
	if n := NewNetwork(42); n.Seed() != 42 {
		t.Errorf("Seed() = %d, want 42", n.Seed())
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestTimeoutStallsData(t *testing.T) {
	t.Parallel()
	b := setupNet(t)
	c := dial(t, b.proxy.Addr())
	mustRoundTrip(t, c, "before")
	if _, err := b.proxy.Timeout(t.Context(), Downstream, 0); err != nil {
		t.Fatalf("Timeout: %v", err)
	}
	_, err := roundTrip(c, "stalled", 200*time.Millisecond)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("round trip under timeout toxic: err = %v, want a read deadline timeout", err)
	}
}

func TestTimeoutClosesAfter(t *testing.T) {
	t.Parallel()
	b := setupNet(t)
	const after = 100 * time.Millisecond
	if _, err := b.proxy.Timeout(t.Context(), Upstream, after); err != nil {
		t.Fatalf("Timeout: %v", err)
	}
	// The toxic's timer starts when the proxy takes the connection, which
	// is after the dial began, not necessarily after it returned.
	start := time.Now()
	c := dial(t, b.proxy.Addr())
	_, err := roundTrip(c, "lost", 5*time.Second)
	if !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("round trip: err = %v, want the connection closed", err)
	}
	if d := time.Since(start); d < after-10*time.Millisecond {
		t.Errorf("closed after %s, want about %s", d, after)
	}
}

func TestDownUpKeepsPort(t *testing.T) {
	t.Parallel()
	b := setupNet(t)
	addr := b.proxy.Addr()
	open := dial(t, addr)
	mustRoundTrip(t, open, "hello") // the connection is relayed, not only accepted

	f, err := b.proxy.Down()
	if err != nil {
		t.Fatalf("Down: %v", err)
	}
	if _, err := roundTrip(open, "cut?", 5*time.Second); err == nil {
		t.Error("round trip on a connection open at Down succeeded, want it cut")
	}
	if _, err := net.DialTimeout("tcp", addr, 2*time.Second); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial while down: err = %v, want ECONNREFUSED", err)
	}
	if _, err := b.proxy.Down(); err == nil {
		t.Error("second Down succeeded, want an error")
	}

	if err := f.Remove(); err != nil {
		t.Fatalf("Remove (Up): %v", err)
	}
	if b.proxy.Addr() != addr {
		t.Errorf("Addr changed from %s to %s", addr, b.proxy.Addr())
	}
	again := dial(t, addr)
	mustRoundTrip(t, again, "again")
	r := f.Report()
	if !r.Fired || r.Kind != "down" || r.Target != "echo" || r.End.Before(r.Start) || r.End.IsZero() {
		t.Errorf("report = %+v, want a fired down fault on echo with an end", r)
	}

	// Up directly also ends the Down fault; with no connection open, a Down
	// does not fire.
	_ = again.Close()
	err = WaitFor(t.Context(), 5*time.Second, "no connection through the proxy",
		func(context.Context) (bool, error) { return b.proxy.openConns() == 0, nil })
	if err != nil {
		t.Fatal(err)
	}
	f2, err := b.proxy.Down()
	if err != nil {
		t.Fatalf("Down: %v", err)
	}
	if err := b.proxy.Up(); err != nil {
		t.Fatalf("Up: %v", err)
	}
	if f2.Active() || f2.Fired() {
		t.Errorf("after Up: active=%t fired=%t, want ended and not fired (nothing was open)", f2.Active(), f2.Fired())
	}
	mustRoundTrip(t, dial(t, addr), "third")
}

func TestFaultFiredOnlyWithTrafficDuringFault(t *testing.T) {
	t.Parallel()
	b := setupNet(t)
	c := dial(t, b.proxy.Addr())
	mustRoundTrip(t, c, "1234")
	if got := b.proxy.BytesThrough(); got != 8 {
		t.Errorf("BytesThrough = %d after a 4-byte round trip, want 8", got)
	}

	idle, err := b.proxy.Latency(t.Context(), Upstream, time.Millisecond, 0)
	if err != nil {
		t.Fatalf("Latency: %v", err)
	}
	if idle.Fired() {
		t.Error("Fired() = true with no traffic since injection")
	}
	if err := idle.Remove(); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	mustRoundTrip(t, c, "after") // traffic after removal does not count
	if idle.Fired() || idle.Report().Fired {
		t.Error("removed fault fired on traffic after its removal")
	}
	if err := idle.Remove(); err != nil {
		t.Errorf("second Remove: %v", err)
	}

	busy, err := b.proxy.Latency(t.Context(), Upstream, time.Millisecond, 0)
	if err != nil {
		t.Fatalf("Latency: %v", err)
	}
	mustRoundTrip(t, c, "during")
	if !busy.Fired() {
		t.Error("Fired() = false while traffic passed")
	}
	if err := busy.Remove(); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	if r := busy.Report(); !r.Fired || r.End.IsZero() {
		t.Errorf("report = %+v, want fired with an end", r)
	}
}

func TestHealRemovesEveryFault(t *testing.T) {
	t.Parallel()
	b := setupNet(t)
	tl := NewTimeline()
	b.net.SetTimeline(tl)
	lat, err := b.proxy.Latency(t.Context(), Downstream, time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}
	stall, err := b.proxy.Timeout(t.Context(), Upstream, 0)
	if err != nil {
		t.Fatal(err)
	}
	down, err := b.proxy.Down()
	if err != nil {
		t.Fatal(err)
	}
	if err := b.proxy.Heal(); err != nil {
		t.Fatalf("Heal: %v", err)
	}
	for _, f := range []*Toxic{lat, stall, down} {
		if f.Active() {
			t.Errorf("%s still active after Heal", f.Kind)
		}
	}
	if d := mustRoundTrip(t, dial(t, b.proxy.Addr()), "healthy"); d >= time.Second {
		t.Errorf("round trip took %s after Heal, latency still applied", d)
	}
	var injected, removed int
	for _, e := range tl.Entries() {
		switch {
		case e.Source == "faults" && bytes.Contains([]byte(e.Text), []byte("injected")):
			injected++
		case e.Source == "faults" && bytes.Contains([]byte(e.Text), []byte("removed")):
			removed++
		}
	}
	if injected != 3 || removed != 3 {
		t.Errorf("timeline has %d injected and %d removed entries, want 3 and 3", injected, removed)
	}
}

func TestNetworkRejectsMisuse(t *testing.T) {
	t.Parallel()
	b := setupNet(t)
	if _, err := b.net.Proxy("echo", b.echo); err == nil {
		t.Error("second proxy with the same name succeeded")
	}
	if _, err := b.proxy.Latency(t.Context(), Direction("sideways"), time.Millisecond, 0); err == nil {
		t.Error("Latency with a bad direction succeeded")
	}
	b.net.Close()
	b.net.Close()
	if _, err := b.net.Proxy("other", b.echo); err == nil {
		t.Error("Proxy after Close succeeded")
	}
	if err := b.proxy.Up(); err == nil {
		t.Error("Up after Close succeeded")
	}
	if _, err := net.DialTimeout("tcp", b.proxy.Addr(), 2*time.Second); err == nil {
		t.Error("dial after Close succeeded")
	}
}

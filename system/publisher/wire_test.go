package publisher

import (
	"bytes"
	"errors"
	"net"
	"testing"
)

// countingConn records each write that reaches the network.
type countingConn struct {
	net.Conn
	writes [][]byte
	err    error
}

func (c *countingConn) Write(b []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	c.writes = append(c.writes, bytes.Clone(b))
	return len(b), nil
}

// A held connection writes nothing until release, then everything kept in
// one write, in order; unheld, each write goes straight through.
func TestHeldConn_WindowGoesOutInOneWrite(t *testing.T) {
	t.Parallel()
	inner := &countingConn{}
	c := &heldConn{Conn: inner}
	if _, err := c.Write([]byte("a")); err != nil || len(inner.writes) != 1 {
		t.Fatalf("unheld write: %v, %d writes", err, len(inner.writes))
	}
	c.hold()
	for _, s := range []string{"b", "c", "d"} {
		if n, err := c.Write([]byte(s)); n != 1 || err != nil {
			t.Fatalf("held write: %d %v", n, err)
		}
	}
	if len(inner.writes) != 1 {
		t.Fatalf("%d writes reached the network while held, want none", len(inner.writes)-1)
	}
	if err := c.release(); err != nil {
		t.Fatal(err)
	}
	if len(inner.writes) != 2 || string(inner.writes[1]) != "bcd" {
		t.Fatalf("writes %q, want [a bcd]", inner.writes)
	}
	if _, err := c.Write([]byte("e")); err != nil || len(inner.writes) != 3 {
		t.Fatalf("write after release: %v, %d writes", err, len(inner.writes))
	}
}

// Past heldMax bytes a held connection writes what it kept first, so
// memory stays bounded and the order holds.
func TestHeldConn_BoundedWhileHeld(t *testing.T) {
	t.Parallel()
	inner := &countingConn{}
	c := &heldConn{Conn: inner}
	c.hold()
	big := bytes.Repeat([]byte("x"), heldMax)
	if _, err := c.Write([]byte("a")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(big); err != nil {
		t.Fatal(err)
	}
	if len(inner.writes) != 2 || string(inner.writes[0]) != "a" || len(inner.writes[1]) != heldMax {
		t.Fatalf("%d writes, want the kept byte then the big write", len(inner.writes))
	}
	if err := c.release(); err != nil || len(inner.writes) != 2 {
		t.Fatalf("release: %v, %d writes", err, len(inner.writes))
	}
}

// A failed write at release is reported, and nothing is kept for later.
func TestHeldConn_ReleaseReportsWriteError(t *testing.T) {
	t.Parallel()
	inner := &countingConn{}
	c := &heldConn{Conn: inner}
	c.hold()
	_, _ = c.Write([]byte("a"))
	inner.err = errors.New("broken pipe")
	if err := c.release(); err == nil {
		t.Fatal("release hid the write error")
	}
	inner.err = nil
	if err := c.release(); err != nil || len(inner.writes) != 0 {
		t.Fatalf("second release: %v, %d writes (the failed bytes must not be sent later)", err, len(inner.writes))
	}
}

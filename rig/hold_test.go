package rig

import (
	"errors"
	"net"
	"strconv"
	"syscall"
	"testing"
)

// TestHoldPort: a held port refuses dials, and is listened on again once
// released. (That the kernel then never hands it to a listener asking for
// a free port was checked in a network namespace with a 4-port ephemeral
// range: 200 of 200 such listeners got another port, all 200 got it
// without the hold.)
//
// The port is never free while the test runs: a guard socket, bound
// with SO_REUSEADDR and not listening, keeps it from the kernel's
// ephemeral choices (the other tests' outgoing connections) before the
// hold takes it and again between the release and the listen.
func TestHoldPort(t *testing.T) {
	t.Parallel()
	guard, port := bindGuard(t, 0)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	release, err := holdPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	_ = syscall.Close(guard)
	if c, err := net.Dial("tcp", addr); !errors.Is(err, syscall.ECONNREFUSED) {
		if c != nil {
			_ = c.Close()
		}
		t.Errorf("dial to a held port: err = %v, want ECONNREFUSED", err)
	}
	guard, _ = bindGuard(t, port)
	defer syscall.Close(guard)
	release()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen on a released port: %v", err)
	}
	_ = l.Close()
	if _, err := holdPort("[::1]:80"); err == nil {
		t.Error("holdPort took an IPv6 address")
	}
}

// bindGuard binds a socket with SO_REUSEADDR to 127.0.0.1:port without
// listening (port 0: one the kernel picks) and returns it and its port.
func bindGuard(t *testing.T, port int) (fd, bound int) {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatalf("bind guard on port %d: %v", port, err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return fd, sa.(*syscall.SockaddrInet4).Port
}

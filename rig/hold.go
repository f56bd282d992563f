package rig

import (
	"fmt"
	"net/netip"
	"syscall"
)

// holdPort binds a socket to addr ("127.0.0.1:PORT") without listening on
// it, and returns what releases it. While a proxy is down its port must
// refuse connections and stay its own: with the listener closed, any
// other listener asking for a free port (another run's proxy, another
// test) could be given it, and the proxy could not come back up on it
// (CI met it once). A bound socket that does not listen keeps the kernel
// from handing the port out, and a dial to it is refused as to a free
// port. SO_REUSEADDR lets it bind past the connections the proxy left in
// TIME_WAIT, and lets the proxy listen again once it is released.
func holdPort(addr string) (release func(), err error) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil || !ap.Addr().Is4() {
		return nil, fmt.Errorf("hold port %s: want an IPv4 address and port (%v)", addr, err)
	}
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("hold port %s: socket: %w", addr, err)
	}
	if err := syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1); err != nil {
		_ = syscall.Close(fd)
		return nil, fmt.Errorf("hold port %s: SO_REUSEADDR: %w", addr, err)
	}
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}); err != nil {
		_ = syscall.Close(fd)
		return nil, fmt.Errorf("hold port %s: bind: %w", addr, err)
	}
	return func() { _ = syscall.Close(fd) }, nil
}

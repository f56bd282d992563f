package infra

import (
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
)

// The ports handed out come from below the kernel's ephemeral range
// (32768 and up on Linux), so no socket the kernel numbers itself takes one
// between choosing it and the container binding it; within this process a
// port is never handed out twice.
const (
	portLow, portHigh = 20000, 32000
)

var (
	portsMu sync.Mutex
	given   = map[int]bool{}
	// taken are the shared services' ports: never chosen.
	taken = map[int]bool{25672: true}
)

// freePorts returns n distinct ports free on 127.0.0.1 now that this
// process never handed out before.
func freePorts(n int) ([]int, error) {
	portsMu.Lock()
	defer portsMu.Unlock()
	out := make([]int, 0, n)
	for tries := 0; len(out) < n; tries++ {
		if tries > 1000 {
			return nil, fmt.Errorf("no free port on 127.0.0.1 in %d-%d", portLow, portHigh)
		}
		p := portLow + rand.IntN(portHigh-portLow)
		if given[p] || taken[p] {
			continue
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			continue
		}
		_ = l.Close()
		given[p] = true
		out = append(out, p)
	}
	return out, nil
}

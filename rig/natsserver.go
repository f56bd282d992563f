package rig

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// NATSBinary is Debian's nats-server, which a run whose relay under test
// publishes to JetStream starts as a child.
const NATSBinary = "/usr/sbin/nats-server"

// NATSServer is a run's own nats-server with JetStream: a child process
// (a Pod named "nats", its lines in the timeline) on a private port of
// 127.0.0.1 with a private store directory, never the machine's shared
// server. Faults may SIGKILL it, stop it, freeze it and start it again: it
// comes back on the same port with the same store, as a restarted node
// would. Close kills it and removes the store.
type NATSServer struct {
	bin, dir string
	port     int
	tl       *Timeline

	mu  sync.Mutex
	pod *Pod
}

// StartNATS starts a nats-server with JetStream (bin: "" is NATSBinary)
// and returns once it serves.
func StartNATS(ctx context.Context, bin string, tl *Timeline) (*NATSServer, error) {
	if bin == "" {
		bin = NATSBinary
	}
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("JetStream for the relay under test: %w (apt-get install nats-server)", err)
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "outboxchaos-nats-")
	if err != nil {
		return nil, fmt.Errorf("JetStream store directory: %w", err)
	}
	s := &NATSServer{bin: bin, dir: dir, port: port, tl: tl}
	if err := s.Start(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// freePort asks the kernel for a free port of 127.0.0.1.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port for JetStream: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Addr is the server's client address (host:port).
func (s *NATSServer) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

// Pod is the server's current process.
func (s *NATSServer) Pod() *Pod {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pod
}

// running reports whether the current process is alive.
func (s *NATSServer) running() bool {
	p := s.Pod()
	if p == nil {
		return false
	}
	select {
	case <-p.Done():
		return false
	default:
		return true
	}
}

// Start starts the server if it is not running and waits until it says
// it is ready (JetStream recovered its store), at most 30 s.
func (s *NATSServer) Start(ctx context.Context) error {
	if s.running() {
		return nil
	}
	args := []string{"-js", "-a", "127.0.0.1", "-p", strconv.Itoa(s.port), "-sd", s.dir, "-n", "outboxchaos-nats"}
	p, err := StartPod(context.Background(), PodSpec{Name: "nats", Binary: s.bin, Args: args}, s.tl)
	if err != nil {
		return fmt.Errorf("start JetStream: %w", err)
	}
	s.mu.Lock()
	s.pod = p
	s.mu.Unlock()
	err = WaitFor(ctx, 30*time.Second, "JetStream ready", func(context.Context) (bool, error) {
		select {
		case <-p.Done():
			return false, fmt.Errorf("nats-server exited %d: %s", p.ExitCode(), p.Output())
		default:
		}
		return strings.Contains(p.Output(), "Server is ready"), nil
	})
	if err != nil {
		_ = p.Kill()
		return fmt.Errorf("start JetStream: %w", err)
	}
	return nil
}

// Crash SIGKILLs the server: what it had written to its store survives.
func (s *NATSServer) Crash() error {
	if p := s.Pod(); p != nil {
		return p.Kill()
	}
	return nil
}

// Stop stops the server gracefully (SIGTERM: it closes its connections
// and its store).
func (s *NATSServer) Stop() error {
	if p := s.Pod(); p != nil {
		return p.Stop(10 * time.Second)
	}
	return nil
}

// Freeze stops the server's process (SIGSTOP): connections stay open,
// nothing answers. Thaw continues it.
func (s *NATSServer) Freeze() error {
	if p := s.Pod(); p != nil {
		return p.Freeze()
	}
	return nil
}

// Thaw continues a frozen server (SIGCONT).
func (s *NATSServer) Thaw() error {
	if p := s.Pod(); p != nil {
		return p.Continue()
	}
	return nil
}

// Close kills the server and removes its store.
func (s *NATSServer) Close() {
	if p := s.Pod(); p != nil {
		_ = p.Continue()
		_ = p.Kill()
	}
	_ = os.RemoveAll(s.dir)
}

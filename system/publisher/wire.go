package publisher

import (
	"net"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// heldConn is the publisher's TCP connection with one addition: between
// hold and release its writes collect in memory and go out as one write.
//
// amqp091-go flushes its buffered writer after every publish, so a batch of
// 50 publishes is 50 write system calls and 50 small TCP segments, which
// the broker reads one by one: on a 2-core machine that was a third of the
// relay's CPU time and a good part of RabbitMQ's. Send holds the wire for
// the length of its window, so a window goes out in one write (or a few,
// past heldMax bytes) and the broker reads it in one go. Nothing waits on a
// held write: release comes at the end of the same Send, before Send
// returns and before its confirms are awaited.
type heldConn struct {
	net.Conn

	mu   sync.Mutex
	held bool
	buf  []byte
}

// heldMax bounds the bytes a held connection keeps before writing them
// anyway (a window of 512 small messages is about 200 KB).
const heldMax = 256 << 10

// dialHeld is amqp.DefaultDial with the connection wrapped in a heldConn,
// which *held receives.
func dialHeld(timeout time.Duration, held **heldConn) func(network, addr string) (net.Conn, error) {
	dial := amqp.DefaultDial(timeout)
	return func(network, addr string) (net.Conn, error) {
		c, err := dial(network, addr)
		if err != nil {
			return nil, err
		}
		h := &heldConn{Conn: c}
		*held = h
		return h, nil
	}
}

// Write writes b, or keeps it while the connection is held.
func (c *heldConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.held && len(c.buf)+len(b) <= heldMax {
		c.buf = append(c.buf, b...)
		return len(b), nil
	}
	if err := c.flushLocked(); err != nil {
		return 0, err
	}
	return c.Conn.Write(b)
}

// hold starts keeping writes.
func (c *heldConn) hold() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.held = true
}

// release writes what was kept and stops keeping writes.
func (c *heldConn) release() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.held = false
	return c.flushLocked()
}

func (c *heldConn) flushLocked() error {
	if len(c.buf) == 0 {
		return nil
	}
	_, err := c.Conn.Write(c.buf)
	c.buf = c.buf[:0]
	return err
}

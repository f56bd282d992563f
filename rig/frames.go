package rig

import (
	"encoding/binary"
	"sync"
)

// Message is a kind of protocol message a proxy counts as it passes: what
// the harness can see a pod do on its link without the pod's help.
type Message string

const (
	// Publish is an AMQP basic.publish a client sent.
	Publish Message = "publish"
	// Confirm is an AMQP basic.ack or basic.nack the broker sent a
	// publishing client (a confirm, either way).
	Confirm Message = "confirm"
	// Return is an AMQP basic.return: the broker handing an unroutable
	// mandatory publish back.
	Return Message = "return"
	// Statement is a statement a Postgres client asked the server to run:
	// a simple query or an extended-protocol Execute.
	Statement Message = "statement"
	// Method is any AMQP method frame (a publish, a channel opened, a
	// confirm, …; a heartbeat is not one): the first a relay sends after
	// a quiet spell is the first step of its publish, whichever way its
	// client library takes it.
	Method Message = "method"
)

// Messages are the kinds a proxy counts, in the order docs list them.
var Messages = []Message{Publish, Confirm, Return, Statement, Method}

// messageCounts counts one direction's messages by kind.
type messageCounts struct {
	mu sync.Mutex
	n  map[Message]int64
}

func (c *messageCounts) add(m Message) {
	c.mu.Lock()
	if c.n == nil {
		c.n = map[Message]int64{}
	}
	c.n[m]++
	c.mu.Unlock()
}

func (c *messageCounts) get(m Message) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[m]
}

// frameReader reads one direction of one connection as a stream of
// protocol messages, told apart by how the stream opens: an AMQP client
// sends "AMQP" and its version, an AMQP server a method frame on channel
// 0; a Postgres client an untyped start-up (or SSL) request. Anything
// else is only counted in bytes. Data that breaks the framing ends the
// reading, never the relaying.
type frameReader struct {
	buf     []byte
	proto   int  // unknown, amqp, postgres, or none
	untyped bool // Postgres: the next message has no type byte
}

const (
	protoUnknown = iota
	protoAMQP
	protoPostgres
	protoNone
)

// maxFrameBytes bounds a frame the reader buffers whole; a larger one
// means the stream is not what it looked like.
const maxFrameBytes = 1 << 24

// postgres start-up codes: protocol 3.0, SSL and GSS encryption requests,
// a cancel request.
const (
	pgProtocol3  = 196608
	pgSSLRequest = 80877103
	pgGSSRequest = 80877104
	pgCancel     = 80877102
)

// feed reads data, calling count for each message it completes.
func (r *frameReader) feed(data []byte, count func(Message)) {
	if r.proto == protoNone {
		return
	}
	r.buf = append(r.buf, data...)
	if r.proto == protoUnknown {
		if len(r.buf) < 4 {
			return
		}
		switch {
		case string(r.buf[:4]) == "AMQP":
			if len(r.buf) < 8 {
				return
			}
			r.buf = r.buf[8:]
			r.proto = protoAMQP
		case r.buf[0] == 1: // a method frame: the broker's connection.start
			r.proto = protoAMQP
		case r.buf[0] == 0: // an untyped start-up message's length
			r.proto, r.untyped = protoPostgres, true
		default:
			r.stop()
			return
		}
	}
	for {
		var ok bool
		if r.proto == protoAMQP {
			ok = r.amqpFrame(count)
		} else {
			ok = r.postgresMessage(count)
		}
		if !ok {
			break
		}
	}
	if r.proto != protoNone && len(r.buf) == 0 {
		r.buf = nil
	}
}

func (r *frameReader) stop() { r.proto, r.buf = protoNone, nil }

// amqpFrame consumes one whole frame (type, channel, size, payload, end
// octet) if buffered, counting the methods of Messages.
func (r *frameReader) amqpFrame(count func(Message)) bool {
	if len(r.buf) < 7 {
		return false
	}
	size := int(binary.BigEndian.Uint32(r.buf[3:7]))
	if size > maxFrameBytes {
		r.stop()
		return false
	}
	if len(r.buf) < 7+size+1 {
		return false
	}
	if r.buf[7+size] != 0xCE {
		r.stop()
		return false
	}
	if r.buf[0] == 1 && size >= 4 {
		count(Method)
		class, method := binary.BigEndian.Uint16(r.buf[7:9]), binary.BigEndian.Uint16(r.buf[9:11])
		if class == 60 { // basic
			switch method {
			case 40:
				count(Publish)
			case 80, 120:
				count(Confirm)
			case 50:
				count(Return)
			}
		}
	}
	r.buf = r.buf[7+size+1:]
	return true
}

// postgresMessage consumes one whole frontend message if buffered,
// counting simple queries and Executes as statements.
func (r *frameReader) postgresMessage(count func(Message)) bool {
	if r.untyped {
		if len(r.buf) < 8 {
			return false
		}
		n := int(binary.BigEndian.Uint32(r.buf[:4]))
		code := binary.BigEndian.Uint32(r.buf[4:8])
		if n < 8 || n > maxFrameBytes {
			r.stop()
			return false
		}
		if len(r.buf) < n {
			return false
		}
		switch code {
		case pgProtocol3:
			r.untyped = false
		case pgSSLRequest, pgGSSRequest:
			// The server answers one byte; a plain start-up follows (or
			// TLS, which ends the reading at its first record).
		case pgCancel:
			r.stop()
			return false
		default:
			r.stop()
			return false
		}
		r.buf = r.buf[n:]
		return true
	}
	if len(r.buf) < 5 {
		return false
	}
	n := int(binary.BigEndian.Uint32(r.buf[1:5]))
	if n < 4 || n > maxFrameBytes {
		r.stop()
		return false
	}
	if len(r.buf) < 1+n {
		return false
	}
	switch r.buf[0] {
	case 'Q', 'E':
		count(Statement)
	}
	r.buf = r.buf[1+n:]
	return true
}

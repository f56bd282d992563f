package rig

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

func amqpMethod(channel, class, method uint16, args ...byte) []byte {
	payload := binary.BigEndian.AppendUint16(binary.BigEndian.AppendUint16(nil, class), method)
	payload = append(payload, args...)
	f := []byte{1}
	f = binary.BigEndian.AppendUint16(f, channel)
	f = binary.BigEndian.AppendUint32(f, uint32(len(payload)))
	f = append(f, payload...)
	return append(f, 0xCE)
}

func amqpBody(channel uint16, body string) []byte {
	f := []byte{3}
	f = binary.BigEndian.AppendUint16(f, channel)
	f = binary.BigEndian.AppendUint32(f, uint32(len(body)))
	f = append(f, body...)
	return append(f, 0xCE)
}

func pgTyped(t byte, body string) []byte {
	m := []byte{t}
	m = binary.BigEndian.AppendUint32(m, uint32(4+len(body)))
	return append(m, body...)
}

func pgUntyped(code uint32, body string) []byte {
	m := binary.BigEndian.AppendUint32(nil, uint32(8+len(body)))
	m = binary.BigEndian.AppendUint32(m, code)
	return append(m, body...)
}

// readAll feeds stream to a fresh reader in random pieces and returns what
// it counted.
func readAll(stream []byte, rng *rand.Rand) map[Message]int64 {
	var r frameReader
	got := map[Message]int64{}
	for len(stream) > 0 {
		n := 1 + rng.IntN(min(len(stream), 13))
		r.feed(stream[:n], func(m Message) { got[m]++ })
		stream = stream[n:]
	}
	return got
}

// TestFrameReaderCounts: the messages a pod's link carries are counted
// however the stream is cut into reads, and a stream in another protocol
// counts nothing.
func TestFrameReaderCounts(t *testing.T) {
	var amqpClient []byte
	amqpClient = append(amqpClient, "AMQP\x00\x00\x09\x01"...)
	amqpClient = append(amqpClient, amqpMethod(0, 10, 11, []byte("start-ok")...)...) // connection.start-ok
	amqpClient = append(amqpClient, amqpMethod(1, 85, 10, 0, 0)...)                  // confirm.select
	for range 3 {
		amqpClient = append(amqpClient, amqpMethod(1, 60, 40, []byte("publish")...)...)
		amqpClient = append(amqpClient, amqpBody(1, "a body with \xCE in it")...)
	}
	amqpClient = append(amqpClient, 8, 0, 0, 0, 0, 0, 0, 0xCE) // heartbeat
	var amqpServer []byte
	amqpServer = append(amqpServer, amqpMethod(0, 10, 10, []byte("start")...)...)
	amqpServer = append(amqpServer, amqpMethod(1, 60, 80, 0, 0, 0, 0, 0, 0, 0, 1, 0)...)  // ack
	amqpServer = append(amqpServer, amqpMethod(1, 60, 120, 0, 0, 0, 0, 0, 0, 0, 2, 0)...) // nack
	amqpServer = append(amqpServer, amqpMethod(1, 60, 50, []byte("returned")...)...)
	var pgClient []byte
	pgClient = append(pgClient, pgUntyped(pgSSLRequest, "")...)
	pgClient = append(pgClient, pgUntyped(pgProtocol3, "user\x00root\x00\x00")...)
	pgClient = append(pgClient, pgTyped('Q', "BEGIN\x00")...)
	pgClient = append(pgClient, pgTyped('P', "\x00UPDATE notification_outbox SET status = $1\x00\x00\x00")...)
	pgClient = append(pgClient, pgTyped('B', "\x00\x00\x00\x00\x00\x00")...)
	pgClient = append(pgClient, pgTyped('E', "\x00\x00\x00\x00\x00")...)
	pgClient = append(pgClient, pgTyped('S', "")...)
	pgClient = append(pgClient, pgTyped('Q', "COMMIT\x00")...)
	for _, c := range []struct {
		name   string
		stream []byte
		want   map[Message]int64
	}{
		{"amqp client", amqpClient, map[Message]int64{Publish: 3, Method: 5}},
		{"amqp server", amqpServer, map[Message]int64{Confirm: 2, Return: 1, Method: 4}},
		{"postgres client", pgClient, map[Message]int64{Statement: 3}},
		{"nats client", []byte("CONNECT {\"verbose\":false}\r\nPUB notifications.x 5\r\nhello\r\n"), map[Message]int64{}},
		{"postgres server", pgTyped('R', "\x00\x00\x00\x00"), map[Message]int64{}},
	} {
		for seed := range uint64(20) {
			got := readAll(c.stream, rand.New(rand.NewPCG(seed, 1)))
			for _, m := range Messages {
				if got[m] != c.want[m] {
					t.Errorf("%s, cut by seed %d: %d %s messages, want %d", c.name, seed, got[m], m, c.want[m])
				}
			}
		}
	}
}

// TestFrameReaderStopsOnBrokenFraming: a frame whose end octet is wrong
// ends the reading; nothing after it is counted.
func TestFrameReaderStopsOnBrokenFraming(t *testing.T) {
	bad := amqpMethod(1, 60, 40)
	bad[len(bad)-1] = 0
	stream := append(append([]byte("AMQP\x00\x00\x09\x01"), bad...), amqpMethod(1, 60, 40)...)
	if got := readAll(stream, rand.New(rand.NewPCG(1, 1))); got[Publish] != 0 {
		t.Errorf("%d publishes counted after a broken frame, want 0", got[Publish])
	}
}

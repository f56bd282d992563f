package publisher

import (
	"fmt"
	"slices"
	"sync"

	amqp "github.com/rabbitmq/amqp091-go"
)

// returnBox takes one channel's basic.returns off its NotifyReturn channel
// and files each under the window that sent the message. Every window sent
// on the channel holds the box until its Await is done, so a window whose
// channel another window replaced still finds its returns: the box belongs
// to the channel, not to the publisher's current connection.
//
// A return names its message by message id only (AMQP's basic.return
// carries no delivery tag). One whose id is in several windows still
// awaited is filed under each of them: a false failure is republished,
// a false confirm would be lost (the relay has a row in one batch at a
// time). A return whose window is already done (it timed out first) is
// dropped.
type returnBox struct {
	c <-chan amqp.Return

	mu   sync.Mutex
	open []*Pending // sent on the channel, not yet done awaiting, in send order
	// dropped: the SharedReturns canary discarded the box with its
	// channel; nothing is read from it or filed in it any more.
	dropped bool
}

func newReturnBox(c <-chan amqp.Return) *returnBox { return &returnBox{c: c} }

// add registers pd, about to be sent on the box's channel.
func (b *returnBox) add(pd *Pending) {
	b.mu.Lock()
	defer b.mu.Unlock()
	pd.why = make([]string, len(pd.msgs))
	b.open = append(b.open, pd)
}

// take files the returns that have arrived, removes pd from the box and
// returns pd's: for each of its messages the broker's reason for returning
// it, "" for none. Called once pd's confirms are in (or its deadline
// passed): a return precedes its message's ack on the wire, and the
// connection's reader hands it to the buffered channel before it reads the
// ack, so every return of a confirmed message of pd has arrived.
func (b *returnBox) take(pd *Pending) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.dropped {
		b.collectLocked()
	}
	b.open = slices.DeleteFunc(b.open, func(w *Pending) bool { return w == pd })
	return pd.why
}

// collectLocked files every return waiting on the channel; a closed
// channel (its connection ended) has delivered all it ever will.
func (b *returnBox) collectLocked() {
	for {
		select {
		case r, ok := <-b.c:
			if !ok {
				return
			}
			b.fileLocked(r)
		default:
			return
		}
	}
}

func (b *returnBox) fileLocked(r amqp.Return) {
	why := fmt.Sprintf("%d %s", r.ReplyCode, r.ReplyText)
	for _, w := range b.open {
		for i, m := range w.msgs {
			if m.MessageID == r.MessageId {
				w.why[i] = why
			}
		}
	}
}

// drop is the SharedReturns canary's reset: the returns read but not yet
// claimed are discarded, and none is read any more, so a window still
// awaited on the channel finds none of its own.
func (b *returnBox) drop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.dropped = true
	for _, w := range b.open {
		clear(w.why)
	}
}

package run

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/outboxchaos/outboxchaos/checker"
	"github.com/outboxchaos/outboxchaos/history"
	"github.com/outboxchaos/outboxchaos/rig"
	"github.com/outboxchaos/outboxchaos/system/clock"
)

// settleView is what settleLook reads of a whole snapshot s: the rows'
// ids, statuses, deferrals and reconcilability, the queues' depths, the
// vendor's held requests, the workers' held deliveries and skips, and the parked copies
// only when the rest is not quiescent and the parking queue holds any.
func settleView(s checker.State) checker.State {
	var v checker.State
	for _, r := range s.Outbox {
		v.Outbox = append(v.Outbox, checker.OutboxRow{ID: r.ID, Status: r.Status, Due: r.Due, Deferred: r.Deferred})
	}
	for _, r := range s.Inbox {
		v.Inbox = append(v.Inbox, checker.InboxRow{MessageID: r.MessageID, Status: r.Status, Settled: r.Settled, Reconcilable: r.Reconcilable})
	}
	v.Queues, v.VendorHeld, v.WorkerHeld, v.WorkerSkips = s.Queues, s.VendorHeld, s.WorkerHeld, s.WorkerSkips
	if !checker.Quiescent(v) && v.Queues.Parking > 0 {
		v.Parked = s.Parked
	}
	return v
}

// The settle's light look decides quiescence as a whole snapshot would:
// on any state, Quiescent answers the same on what settleLook reads. It
// fails if Quiescent comes to read a field the look leaves out, or if the
// look's rule for reading parked copies stops being safe.
func TestSettleLookDecidesAsSnapshot(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		var s checker.State
		n := rapid.IntRange(0, 6).Draw(t, "rows")
		mid := func(i int) string { return checker.MessageID(int64(i)) }
		// Mostly settled, so that the cases where one field decides come
		// up: a busy value one draw in four.
		busy := func(label string) bool { return rapid.IntRange(0, 3).Draw(t, label) == 0 }
		for i := 1; i <= n; i++ {
			s.Outbox = append(s.Outbox, checker.OutboxRow{ID: int64(i), DedupKey: fmt.Sprintf("k%d", i), Kind: "K",
				Status:   rapid.SampledFrom([]string{"PUBLISHED", "PUBLISHED", "PENDING", "PUBLISHING", "SKIPPED", "FAILED", "EXPIRED"}).Draw(t, "outbox status"),
				Deferred: !busy("not deferred"), Attempts: rapid.IntRange(0, 3).Draw(t, "attempts"), MemberID: int64(i)})
			if busy("not in the inbox") {
				if rapid.Bool().Draw(t, "parked") {
					s.Parked = append(s.Parked, checker.ParkedRecord{MessageID: mid(i), Reason: "r"})
				}
			} else {
				s.Inbox = append(s.Inbox, checker.InboxRow{MessageID: mid(i), OutboxID: int64(i), DedupKey: fmt.Sprintf("k%d", i),
					Status:       rapid.SampledFrom([]string{"SENT", "SENT", "FAILED", "ERROR", "SENDING", "RESENDING"}).Draw(t, "inbox status"),
					Reconcilable: busy("reconcilable")})
			}
		}
		if busy("main") {
			s.Queues.Main = 1
		}
		if busy("retry") {
			s.Queues.Retry = 1
		}
		s.Queues.Parking = len(s.Parked) // a snapshot reads every parked copy
		if busy("held") {
			s.VendorHeld = 1
		}
		if busy("delivery held") {
			s.WorkerHeld = 1
		}
		if n > 0 && rapid.Bool().Draw(t, "a skip") {
			s.WorkerSkips = []string{mid(rapid.IntRange(1, n).Draw(t, "skipped"))}
		}
		s.Registered = []string{"010"}
		s.Ledger = []checker.HandsetEntry{{RefKey: mid(1), Phone: "010"}}
		if whole, light := checker.Quiescent(s), checker.Quiescent(settleView(s)); whole != light {
			t.Fatalf("Quiescent: %v on the whole snapshot, %v on the settle's look\n%+v", whole, light, s)
		}
	})
}

// A PENDING row is deferred only when no relay works it within the
// horizon: a relay outside its window works it when the window opens, so
// a row due at 07:59:59 is not deferred (the window opens in a second),
// one due at 21:00 is (until 08:00 the next day), and a row inside the
// window is deferred only when it is due past the horizon.
func TestDeferredByTheRelayWindow(t *testing.T) {
	t.Parallel()
	c := Compressed()
	e := &Env{Cfg: c}
	at := func(s string) time.Time {
		tm, err := time.ParseInLocation(time.DateTime, "2026-12-06 "+s, clock.Seoul)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	for _, tc := range []struct {
		now, due string
		want     bool
	}{
		{"07:59:59", "07:59:58", false},
		{"07:30:00", "07:29:00", false},
		{"06:30:00", "06:29:00", true},
		{"21:00:00", "20:59:00", true},
		{"12:00:00", "12:00:01", false},
		{"12:00:00", "13:30:00", true},
	} {
		if got := e.deferred("PENDING", at(tc.due), []time.Time{at(tc.now)}); got != tc.want {
			t.Errorf("now %s, due %s: deferred %v, want %v", tc.now, tc.due, got, tc.want)
		}
	}
	if w := e.worksAt(at("07:59:58"), at("07:59:59")); !w.Equal(at("08:00:00")) {
		t.Errorf("worked at %s, want 08:00", w)
	}
}

// A worker holds a delivery from its delivery event until it acks it,
// requeues it or fails at either; the auto-ack canary's second ack (a
// no-op) lets go of nothing more.
func TestHoldsDelivery(t *testing.T) {
	t.Parallel()
	ev := func(names ...string) []history.Event {
		var out []history.Event
		for _, n := range names {
			out = append(out, history.Event{Pod: "worker-1", Name: n})
		}
		return out
	}
	for _, c := range []struct {
		events []history.Event
		held   bool
	}{
		{ev(history.ConsumeStart), false},
		{ev(history.Delivery), true},
		{ev(history.Delivery, history.Claim, history.VendorCall, history.Result), true},
		{ev(history.Delivery, history.Ack), false},
		{ev(history.Delivery, history.AckFailed), false},
		{ev(history.Delivery, history.Requeue), false},
		{ev(history.Delivery, history.NackFailed), false},
		{ev(history.Delivery, history.Ack, history.Claim, history.Ack), false},
		{ev(history.Delivery, history.Ack, history.Delivery, history.Republish), true},
	} {
		if got := holdsDelivery(c.events); got != c.held {
			t.Errorf("after %v: holds %v, want %v", c.events, got, c.held)
		}
	}
}

// A settle whose bound passes while its latest look could not read the
// state is not judged (UnreadError); one whose latest look read a busy
// state timed out as before, and one that settles returns nil. A look cut
// short by the wait's own deadline leaves the latest outcome as it was.
// The wait is a stand-in that makes exactly the listed looks, then says
// its bound passed.
func TestSettleUnreadIsNotJudged(t *testing.T) {
	t.Parallel()
	busy := checker.State{Outbox: []checker.OutboxRow{{ID: 1, Status: history.OutboxPublishing}}}
	noJump := func(context.Context, checker.State) error { return nil }
	refused := errors.New("broker: connection refused")
	const read, cut = "read", "cut" // a busy state read; a look the bound cut short
	cases := []struct {
		name  string
		looks []any // read, cut, a settled state, or an error
		want  string
	}{
		{name: "unread to the end", looks: []any{read, refused}, want: "unread"},
		{name: "read again before the end", looks: []any{refused, read}, want: "timeout"},
		{name: "cut by the bound after a read", looks: []any{read, cut}, want: "timeout"},
		{name: "cut by the bound after an unread look", looks: []any{refused, cut}, want: "unread"},
		{name: "settles", looks: []any{refused, checker.State{}}, want: "settled"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			n := 0
			look := func(ctx context.Context) (checker.State, error) {
				l := c.looks[n]
				n++
				switch l := l.(type) {
				case checker.State:
					return l, nil
				case error:
					return busy, l
				}
				if l == cut {
					return busy, ctx.Err()
				}
				return busy, nil
			}
			wait := func(ctx context.Context, _ time.Duration, what string, cond func(context.Context) (bool, error)) error {
				for range c.looks {
					lctx := ctx
					if c.looks[n] == cut {
						cctx, cancel := context.WithDeadline(ctx, time.Now())
						cancel()
						lctx = cctx
					}
					if ok, _ := cond(lctx); ok {
						return nil
					}
				}
				return fmt.Errorf("%w waiting for %s", rig.ErrTimeout, what)
			}
			err := waitQuiescent(context.Background(), time.Minute, look, noJump, wait)
			var ue *UnreadError
			got := "timeout"
			switch {
			case err == nil:
				got = "settled"
			case errors.As(err, &ue):
				got = "unread"
				if !errors.Is(err, refused) {
					t.Errorf("%v does not carry the look's error", err)
				}
			case !errors.Is(err, rig.ErrTimeout):
				t.Fatalf("unexpected error %v", err)
			}
			if got != c.want {
				t.Errorf("got %s (%v), want %s", got, err, c.want)
			}
		})
	}
}

package testenv

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/outboxchaos/outboxchaos/history"
	"github.com/outboxchaos/outboxchaos/system/alert"
)

func TestEventuallyReturnsOnceTheConditionHolds(t *testing.T) {
	calls := 0
	Eventually(t, 5*time.Second, "the third check", func() bool {
		calls++
		return calls == 3
	})
	if calls != 3 {
		t.Fatalf("cond checked %d times, want 3 (it held on the third)", calls)
	}
}

// fatalTB records Fatalf instead of ending the test; every other method of
// testing.TB is left nil, as Eventually calls only Helper and Fatalf.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper() {}

func (f *fatalTB) Fatalf(format string, args ...any) { f.msg = fmt.Sprintf(format, args...) }

func TestEventuallyFailsNamingWhatItAwaited(t *testing.T) {
	f := &fatalTB{}
	start := time.Now()
	Eventually(f, 30*time.Millisecond, "the impossible", func() bool { return false })
	if !strings.Contains(f.msg, "the impossible") || !strings.Contains(f.msg, "30ms") {
		t.Fatalf("failure %q: want it to name what was awaited and the timeout", f.msg)
	}
	if d := time.Since(start); d < 30*time.Millisecond {
		t.Fatalf("gave up after %v, before the 30ms timeout", d)
	}
}

func TestAlertRecorderKeepsEveryAlertInOrder(t *testing.T) {
	var r AlertRecorder
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.Send(context.Background(), alert.Alert{Kind: history.AlertParked, OutboxID: int64(i)})
		}()
	}
	wg.Wait()
	r.Send(context.Background(), alert.Alert{Kind: history.AlertExpired, OutboxID: 99})
	if r.Count() != 21 || len(r.All()) != 21 {
		t.Fatalf("count %d, all %d: want 21", r.Count(), len(r.All()))
	}
	if got := r.OfKind(history.AlertParked); len(got) != 20 {
		t.Fatalf("%d PARKED alerts, want 20", len(got))
	}
	if got := r.OfKind(history.AlertExpired); len(got) != 1 || got[0].OutboxID != 99 {
		t.Fatalf("EXPIRED alerts %+v, want the one for outbox 99", got)
	}
	if all := r.All(); all[len(all)-1].OutboxID != 99 {
		t.Fatalf("last alert %+v, want the one sent last", all[len(all)-1])
	}
	all := r.All()
	all[0].Kind = "CHANGED"
	if r.All()[0].Kind == "CHANGED" {
		t.Fatal("All returned the recorder's own slice, not a copy")
	}
}

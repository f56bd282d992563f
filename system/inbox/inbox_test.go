package inbox_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/outboxchaos/outboxchaos/history"
	"github.com/outboxchaos/outboxchaos/system/clock"
	"github.com/outboxchaos/outboxchaos/system/inbox"
	"github.com/outboxchaos/outboxchaos/system/testenv"
)

func claim(mid string) inbox.Claim {
	return inbox.Claim{MessageID: mid, OutboxID: 1, DedupKey: "GRADE_RENEWAL:1", Kind: "GRADE_RENEWAL", Phone: "01000000001"}
}

// design §5 step 3: the claim INSERT is the guard. Concurrent copies of one
// message_id (all past the peek) get exactly one winner.
func TestTryClaim_ConcurrentCopiesExactlyOneWins(t *testing.T) {
	t.Parallel()
	db := testenv.NewMigratedSchema(t)
	ctx := context.Background()
	now := clock.At(time.Now(), 10, 0)
	for round := 0; round < 10; round++ {
		mid := "notification-outbox-" + string(rune('a'+round))
		const copies = 8
		var wg sync.WaitGroup
		start := make(chan struct{})
		wins := make(chan bool, copies)
		for range copies {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				won, err := inbox.TryClaim(ctx, db.Pool, claim(mid), now)
				if err != nil {
					t.Errorf("claim: %v", err)
				}
				wins <- won
			}()
		}
		close(start)
		wg.Wait()
		close(wins)
		n := 0
		for w := range wins {
			if w {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("round %d: %d copies won the claim, want exactly 1", round, n)
		}
	}
	rows, err := inbox.All(ctx, db.Pool)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 10 {
		t.Fatalf("%d history rows, want 10", len(rows))
	}
}

// Step 5 writes a result only over a SENDING row; Release deletes only a
// SENDING claim; a released claim can be claimed again.
func TestFinishAndRelease_OnlyFromSending(t *testing.T) {
	t.Parallel()
	db := testenv.NewMigratedSchema(t)
	ctx := context.Background()
	now := clock.At(time.Now(), 10, 0)
	if st, err := inbox.Peek(ctx, db.Pool, "m1"); err != nil || st != "" {
		t.Fatalf("peek on empty inbox: %q %v", st, err)
	}
	if won, err := inbox.TryClaim(ctx, db.Pool, claim("m1"), now); err != nil || !won {
		t.Fatalf("claim: %v %v", won, err)
	}
	if st, _ := inbox.Peek(ctx, db.Pool, "m1"); st != history.InboxSending {
		t.Fatalf("peek saw %q, want the SENDING row", st)
	}
	if ok, err := inbox.Finish(ctx, db.Pool, "m1", history.InboxSent, "1000", "", now); err != nil || !ok {
		t.Fatalf("finish: %v %v", ok, err)
	}
	// A second result (e.g. a late writer after cleanup) changes nothing.
	if ok, err := inbox.Finish(ctx, db.Pool, "m1", history.InboxError, "X", "late", now); err != nil || ok {
		t.Fatalf("second finish: %v %v, want false", ok, err)
	}
	// A finished row is never released: it keeps blocking every copy.
	if ok, err := inbox.Release(ctx, db.Pool, "m1"); err != nil || ok {
		t.Fatalf("release of a SENT row: %v %v, want false", ok, err)
	}
	if won, _ := inbox.TryClaim(ctx, db.Pool, claim("m1"), now); won {
		t.Fatal("claimed a SENT message again")
	}
	rows, _ := inbox.All(ctx, db.Pool)
	if len(rows) != 1 || rows[0].Status != history.InboxSent || *rows[0].VendorCode != "1000" || rows[0].Error != nil ||
		rows[0].OutboxID != 1 || rows[0].DedupKey != "GRADE_RENEWAL:1" {
		t.Fatalf("rows %+v", rows)
	}

	// Definitely-not-sent: the claim is deleted and may be taken again.
	if won, _ := inbox.TryClaim(ctx, db.Pool, claim("m2"), now); !won {
		t.Fatal("claim m2")
	}
	if ok, err := inbox.Release(ctx, db.Pool, "m2"); err != nil || !ok {
		t.Fatalf("release: %v %v", ok, err)
	}
	if won, _ := inbox.TryClaim(ctx, db.Pool, claim("m2"), now); !won {
		t.Fatal("released claim could not be taken again")
	}

	// A park on record: FAILED blocks every claim; only Reclaim takes it
	// back, once, and only from FAILED.
	if ok, _ := inbox.Finish(ctx, db.Pool, "m2", history.InboxFailed, "", "DELIVERY_LIMIT", now); !ok {
		t.Fatal("park m2")
	}
	if won, _ := inbox.TryClaim(ctx, db.Pool, claim("m2"), now); won {
		t.Fatal("claimed a parked message")
	}
	if ok, err := inbox.Reclaim(ctx, db.Pool, "m1", now); err != nil || ok {
		t.Fatalf("reclaim of a SENT row: %v %v, want false", ok, err)
	}
	if ok, err := inbox.Reclaim(ctx, db.Pool, "m2", now); err != nil || !ok {
		t.Fatalf("reclaim: %v %v", ok, err)
	}
	if ok, _ := inbox.Reclaim(ctx, db.Pool, "m2", now); ok {
		t.Fatal("reclaimed twice")
	}
	if st, _ := inbox.Peek(ctx, db.Pool, "m2"); st != history.InboxSending {
		t.Fatalf("reclaimed row is %q, want SENDING", st)
	}
}

// Cleanup's query: SENDING rows created before the cutoff become ERROR;
// younger SENDING rows and finished rows are untouched.
func TestExpireSending_OnlyOldSendingRows(t *testing.T) {
	t.Parallel()
	db := testenv.NewMigratedSchema(t)
	ctx := context.Background()
	now := clock.At(time.Now(), 10, 0)
	old, young, done := claim("old"), claim("young"), claim("done")
	for c, at := range map[inbox.Claim]time.Time{old: now.Add(-11 * time.Minute), young: now.Add(-9 * time.Minute), done: now.Add(-time.Hour)} {
		if won, err := inbox.TryClaim(ctx, db.Pool, c, at); err != nil || !won {
			t.Fatal(err)
		}
	}
	if _, err := inbox.Finish(ctx, db.Pool, "done", history.InboxSent, "1000", "", now); err != nil {
		t.Fatal(err)
	}
	rows, err := inbox.ExpireSending(ctx, db.Pool, now.Add(-10*time.Minute), now)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].MessageID != "old" || rows[0].Status != history.InboxError || *rows[0].Error != "SENDING_TIMEOUT" {
		t.Fatalf("expired %+v, want only old", rows)
	}
	all, _ := inbox.All(ctx, db.Pool)
	status := map[string]string{}
	for _, r := range all {
		status[r.MessageID] = r.Status
	}
	if status["young"] != history.InboxSending || status["done"] != history.InboxSent || status["old"] != history.InboxError {
		t.Fatalf("statuses %v", status)
	}
}

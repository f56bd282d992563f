package relay_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/outboxchaos/outboxchaos/history"
	"github.com/outboxchaos/outboxchaos/system/broker"
	"github.com/outboxchaos/outboxchaos/system/clock"
	"github.com/outboxchaos/outboxchaos/system/killpoint"
	"github.com/outboxchaos/outboxchaos/system/notification"
	"github.com/outboxchaos/outboxchaos/system/outbox"
	"github.com/outboxchaos/outboxchaos/system/publisher"
	"github.com/outboxchaos/outboxchaos/system/relay"
	"github.com/outboxchaos/outboxchaos/system/testenv"
)

// design §3 / §6 case 6: two relay runs that overlap (both hold claims at the
// same moment) take disjoint rows, and every row is published exactly once.
func TestClaim_ConcurrentRelaysTakeDisjointRows(t *testing.T) {
	t.Parallel()
	db := testenv.NewMigratedSchema(t)
	clk := frozen(10, 0, 0)
	now := clk.Now()
	const rows = 200
	for m := int64(1); m <= rows; m++ {
		addMember(t, db, m, true, true)
		enqueue(t, db, now, notification.GradeRenewal, m, now)
	}
	// Each relay's first publish waits until the other relay is also
	// publishing, so both runs certainly overlap with claims held.
	inA, inB := make(chan struct{}), make(chan struct{})
	barrier := func(mine, other chan struct{}, name string) func([]publisher.Message) {
		var once sync.Once
		return func([]publisher.Message) {
			once.Do(func() {
				close(mine)
				select {
				case <-other:
				case <-time.After(20 * time.Second):
					t.Errorf("relay %s: the other relay never reached publish while %s held its claim", name, name)
				}
			})
		}
	}
	pubA := &fakePub{hook: barrier(inA, inB, "A")}
	pubB := &fakePub{hook: barrier(inB, inA, "B")}
	rec := &testenv.AlertRecorder{}
	cfgA := testConfig(db, db.Schema, "relay-a")
	cfgB := testConfig(db, db.Schema, "relay-b")
	cfgA.BatchSize, cfgB.BatchSize = 50, 50
	ra := newRelay(cfgA, db, pubA, clk, rec)
	rb := newRelay(cfgB, db, pubB, clk, rec)
	var wg sync.WaitGroup
	for _, r := range []*relay.Relay{ra, rb} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				st, err := r.RunOnce(context.Background())
				if err != nil {
					t.Errorf("RunOnce: %v", err)
					return
				}
				if st.Claimed == 0 {
					return
				}
				if st.Claimed > 50 {
					t.Errorf("claimed %d rows, batch size is 50", st.Claimed)
				}
			}
		}()
	}
	wg.Wait()
	seen := map[string]string{}
	for name, p := range map[string]*fakePub{"relay-a": pubA, "relay-b": pubB} {
		for _, m := range p.published() {
			if prev, dup := seen[m.MessageID]; dup {
				t.Errorf("%s published by %s and %s", m.MessageID, prev, name)
			}
			seen[m.MessageID] = name
		}
	}
	if len(seen) != rows {
		t.Fatalf("%d distinct messages published, want %d", len(seen), rows)
	}
	all, err := outbox.All(context.Background(), db.Pool)
	if err != nil {
		t.Fatal(err)
	}
	per := map[string]int{}
	for _, r := range all {
		if r.Status != history.OutboxPublished {
			t.Fatalf("row %d is %s, want PUBLISHED", r.ID, r.Status)
		}
		if seen[notification.MessageID(r.ID)] != str(r.ClaimedBy) {
			t.Fatalf("row %d marked by %s but published by %s", r.ID, str(r.ClaimedBy), seen[notification.MessageID(r.ID)])
		}
		per[str(r.ClaimedBy)]++
	}
	if per["relay-a"] < 50 || per["relay-b"] < 50 {
		t.Fatalf("rows per relay %v: both runs should have published at least one batch", per)
	}
	if rec.Count() != 0 {
		t.Fatalf("unexpected alerts")
	}
}

// design §3: every transition after the claim is conditional on
// claimed_by = this run. A run whose lease passed and whose rows were
// reclaimed by another run writes nothing — neither PUBLISHED nor a failure.
func TestLostLease_StaleRunWritesNothing(t *testing.T) {
	t.Parallel()
	db := testenv.NewMigratedSchema(t)
	clk := frozen(10, 0, 0)
	start := clk.Now()
	addMember(t, db, 1, true, true)
	addMember(t, db, 2, true, true)
	id1 := enqueue(t, db, start, notification.GradeRenewal, 1, start)
	id2 := enqueue(t, db, start, notification.GradeRenewal, 2, start)

	blockingPub := func(in chan struct{}, release chan struct{}) *fakePub {
		var once sync.Once
		return &fakePub{hook: func([]publisher.Message) {
			once.Do(func() { close(in) })
			<-release
		}}
	}
	aIn, aRelease := make(chan struct{}), make(chan struct{})
	pubA := blockingPub(aIn, aRelease)
	// A's publish of row 1 is confirmed, of row 2 nacked: neither result
	// may be written once A lost its lease.
	pubA.outcome = func(m publisher.Message) publisher.Outcome {
		if m.MessageID == notification.MessageID(id2) {
			return publisher.Nacked
		}
		return publisher.Confirmed
	}
	bIn, bRelease := make(chan struct{}), make(chan struct{})
	pubB := blockingPub(bIn, bRelease)
	cfgA := testConfig(db, db.Schema, "relay-a")
	cfgB := testConfig(db, db.Schema, "relay-b")
	recA, recB := &testenv.AlertRecorder{}, &testenv.AlertRecorder{}
	ra := newRelay(cfgA, db, pubA, clk, recA)
	rb := newRelay(cfgB, db, pubB, clk, recB)

	type result struct {
		st  relay.Stats
		err error
	}
	aDone, bDone := make(chan result, 1), make(chan result, 1)
	go func() { st, err := ra.RunOnce(context.Background()); aDone <- result{st, err} }()
	<-aIn
	for _, id := range []int64{id1, id2} {
		if r := row(t, db, id); r.Status != history.OutboxPublishing || str(r.ClaimedBy) != "relay-a" {
			t.Fatalf("row %d while A publishes: %s by %s", id, r.Status, str(r.ClaimedBy))
		}
	}
	// A's lease passes; B reclaims and claims the same rows.
	clk.Set(start.Add(cfgA.Lease + time.Second))
	go func() { st, err := rb.RunOnce(context.Background()); bDone <- result{st, err} }()
	<-bIn
	for _, id := range []int64{id1, id2} {
		r := row(t, db, id)
		if r.Status != history.OutboxPublishing || str(r.ClaimedBy) != "relay-b" || str(r.StatusReason) != "CLAIM_EXPIRED" {
			t.Fatalf("row %d after B's claim: %s by %s (%s)", id, r.Status, str(r.ClaimedBy), str(r.StatusReason))
		}
	}
	close(aRelease)
	a := <-aDone
	if a.err != nil {
		t.Fatalf("A: %v", a.err)
	}
	if a.st.Published != 0 || a.st.LostLease != 1 {
		t.Fatalf("A stats %+v: want 0 published, 1 lost lease", a.st)
	}
	for _, id := range []int64{id1, id2} {
		r := row(t, db, id)
		if r.Status != history.OutboxPublishing || str(r.ClaimedBy) != "relay-b" || r.Attempts != 0 || r.LastError != nil {
			t.Fatalf("stale run A wrote row %d: %s by %s attempts %d err %s", id, r.Status, str(r.ClaimedBy), r.Attempts, str(r.LastError))
		}
	}
	if recA.Count() != 0 {
		t.Fatalf("stale run alerted")
	}
	close(bRelease)
	b := <-bDone
	if b.err != nil {
		t.Fatalf("B: %v", b.err)
	}
	if b.st.Reclaimed != 2 || b.st.Published != 2 {
		t.Fatalf("B stats %+v: want 2 reclaimed, 2 published", b.st)
	}
	for _, id := range []int64{id1, id2} {
		if r := row(t, db, id); r.Status != history.OutboxPublished || str(r.ClaimedBy) != "relay-b" {
			t.Fatalf("row %d: %s by %s, want PUBLISHED by relay-b", id, r.Status, str(r.ClaimedBy))
		}
	}
}

// design §3: at the start of each run, PUBLISHING rows whose lease passed go
// back to PENDING with reason CLAIM_EXPIRED; live leases and other statuses
// are untouched.
func TestReclaim_OnlyExpiredPublishingRows(t *testing.T) {
	t.Parallel()
	db := testenv.NewMigratedSchema(t)
	ctx := context.Background()
	clk := frozen(10, 0, 0)
	now := clk.Now()
	for m := int64(1); m <= 4; m++ {
		addMember(t, db, m, true, true)
	}
	expired := enqueue(t, db, now, notification.GradeRenewal, 1, now)
	live := enqueue(t, db, now, notification.GradeRenewal, 2, now)
	pending := enqueue(t, db, now, notification.GradeRenewal, 3, now)
	done := enqueue(t, db, now, notification.GradeRenewal, 4, now)
	set := func(id int64, status, by string, until time.Time) {
		if _, err := db.Pool.Exec(ctx, `UPDATE notification_outbox SET status = $2, claimed_by = $3, claimed_until = $4,
			published_at = CASE WHEN $2 = 'PUBLISHED' THEN $5::timestamptz END WHERE id = $1`, id, status, by, until, now.Add(-time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	set(expired, history.OutboxPublishing, "dead-relay", now.Add(-time.Second))
	set(live, history.OutboxPublishing, "other-relay", now.Add(time.Minute))
	set(done, history.OutboxPublished, "old-relay", now.Add(-time.Hour))
	liveBefore := row(t, db, live)

	var during outbox.Row
	pub := &fakePub{hook: func([]publisher.Message) { during = row(t, db, expired) }}
	st := runOnce(t, newRelay(testConfig(db, db.Schema, "relay-x"), db, pub, clk, &testenv.AlertRecorder{}))
	if st.Reclaimed != 1 {
		t.Fatalf("reclaimed %d rows, want 1", st.Reclaimed)
	}
	// The reclaimed row went back to PENDING (CLAIM_EXPIRED) and was then
	// claimed by this run.
	if str(during.StatusReason) != "CLAIM_EXPIRED" || str(during.ClaimedBy) != "relay-x" {
		t.Fatalf("reclaimed row during publish: reason %s claimed by %s", str(during.StatusReason), str(during.ClaimedBy))
	}
	got := map[string]bool{}
	for _, m := range pub.published() {
		got[m.MessageID] = true
	}
	if len(got) != 2 || !got[notification.MessageID(expired)] || !got[notification.MessageID(pending)] {
		t.Fatalf("published %v, want exactly the reclaimed and the pending row", got)
	}
	l := row(t, db, live)
	if l.Status != history.OutboxPublishing || str(l.ClaimedBy) != "other-relay" || !l.ClaimedUntil.Equal(*liveBefore.ClaimedUntil) || l.StatusReason != nil {
		t.Fatalf("live lease touched: %+v", l)
	}
	if d := row(t, db, done); d.Status != history.OutboxPublished || str(d.ClaimedBy) != "old-relay" {
		t.Fatalf("published row touched: %+v", d)
	}
}

// design §3 order: publish → confirm → mark. While the publish is in flight
// the row is PUBLISHING (never PUBLISHED before its confirm); a confirmed
// row becomes PUBLISHED; the message carries message_id
// notification-outbox-{id} and a body the worker's strict decoder accepts.
func TestPublish_MarkOnlyAfterConfirm(t *testing.T) {
	t.Parallel()
	db := testenv.NewMigratedSchema(t)
	clk := frozen(10, 0, 0)
	now := clk.Now()
	addMember(t, db, 1, true, true)
	id := enqueue(t, db, now, notification.GradeRenewal, 1, now)
	var during outbox.Row
	pub := &fakePub{hook: func([]publisher.Message) { during = row(t, db, id) }}
	st := runOnce(t, newRelay(testConfig(db, db.Schema, "relay-x"), db, pub, clk, &testenv.AlertRecorder{}))
	if during.Status != history.OutboxPublishing || str(during.ClaimedBy) != "relay-x" ||
		!during.ClaimedUntil.Equal(now.Add(2*time.Second)) {
		t.Fatalf("row during publish: %s by %s until %v; want PUBLISHING by relay-x with a 2s lease",
			during.Status, str(during.ClaimedBy), during.ClaimedUntil)
	}
	if st.Claimed != 1 || st.Published != 1 {
		t.Fatalf("stats %+v", st)
	}
	if r := row(t, db, id); r.Status != history.OutboxPublished {
		t.Fatalf("confirmed row is %s", r.Status)
	}
	msgs := pub.published()
	if len(msgs) != 1 {
		t.Fatalf("%d messages", len(msgs))
	}
	m := msgs[0]
	if m.MessageID != fmt.Sprintf("notification-outbox-%d", id) || m.RoutingKey != broker.KeySend {
		t.Fatalf("message id %q key %q", m.MessageID, m.RoutingKey)
	}
	p, err := notification.Decode(m.Body)
	if err != nil {
		t.Fatalf("worker cannot decode the relay's body: %v\n%s", err, m.Body)
	}
	if p.OutboxID != id || p.DedupKey != row(t, db, id).DedupKey || p.MemberID != 1 {
		t.Fatalf("body %+v", p)
	}
}

// design §3 failure: a publish that was not confirmed (nacked, returned or
// timed out) puts the row back to PENDING with attempts+1 and backoff 1, 2,
// 4, 8, 16, then 30 minutes; the fifth attempt raises exactly one alert.
func TestPublish_FailureBacksOffAndAlertsOnFifthAttempt(t *testing.T) {
	t.Parallel()
	db := testenv.NewMigratedSchema(t)
	clk := frozen(10, 0, 0)
	addMember(t, db, 1, true, true)
	id := enqueue(t, db, clk.Now(), notification.GradeRenewal, 1, clk.Now())
	outcomes := []publisher.Outcome{publisher.Nacked, publisher.Returned, publisher.TimedOut,
		publisher.ChannelClosed, publisher.WriteFailed, publisher.Nacked, publisher.Returned}
	attempt := 0
	pub := &fakePub{outcome: func(publisher.Message) publisher.Outcome { return outcomes[attempt-1] }}
	rec := &testenv.AlertRecorder{}
	r := newRelay(testConfig(db, db.Schema, "relay-x"), db, pub, clk, rec)
	wantWait := []time.Duration{1, 2, 4, 8, 16, 30, 30}
	for attempt = 1; attempt <= len(wantWait); attempt++ {
		now := clk.Now()
		st := runOnce(t, r)
		if st.Claimed != 1 || st.Failed != 1 || st.Published != 0 {
			t.Fatalf("attempt %d: stats %+v", attempt, st)
		}
		got := row(t, db, id)
		want := now.Add(wantWait[attempt-1] * time.Minute)
		if got.Status != history.OutboxPending || got.Attempts != attempt || !got.NextAttemptAt.Equal(want) ||
			got.ClaimedBy != nil || got.ClaimedUntil != nil || str(got.StatusReason) != "PUBLISH_FAILED" ||
			!strings.Contains(str(got.LastError), outcomes[attempt-1].String()) {
			t.Fatalf("attempt %d: %s attempts %d next %s (want %s) claimed %s reason %s err %s", attempt, got.Status,
				got.Attempts, got.NextAttemptAt.In(clock.Seoul), want, str(got.ClaimedBy), str(got.StatusReason), str(got.LastError))
		}
		alerts := rec.OfKind(history.AlertRelayAttempts)
		wantAlerts := 0
		if attempt >= 5 {
			wantAlerts = 1
		}
		if len(alerts) != wantAlerts {
			t.Fatalf("after attempt %d: %d RELAY_ATTEMPTS alerts, want %d", attempt, len(alerts), wantAlerts)
		}
		if wantAlerts == 1 && (alerts[0].OutboxID != id || alerts[0].MessageID != notification.MessageID(id) || alerts[0].DedupKey == "") {
			t.Fatalf("alert %+v does not name the row", alerts[0])
		}
		// Not due a second before its next attempt.
		clk.Set(got.NextAttemptAt.Add(-time.Second))
		if st := runOnce(t, r); st.Claimed != 0 {
			t.Fatalf("attempt %d: row claimed before its backoff passed", attempt)
		}
		clk.Set(got.NextAttemptAt)
	}
	if rec.Count() != 1 {
		t.Fatalf("%d alerts in all, want 1", rec.Count())
	}
}

// A batch that could not be published at all (no connection) is released
// with backoff at once and the run reports the error.
func TestPublish_BatchErrorReleasesWithBackoff(t *testing.T) {
	t.Parallel()
	db := testenv.NewMigratedSchema(t)
	clk := frozen(10, 0, 0)
	now := clk.Now()
	addMember(t, db, 1, true, true)
	id := enqueue(t, db, now, notification.GradeRenewal, 1, now)
	pub := &fakePub{err: errors.New("dial broker: connection refused")}
	_, err := newRelay(testConfig(db, db.Schema, "relay-x"), db, pub, clk, &testenv.AlertRecorder{}).RunOnce(context.Background())
	if err == nil {
		t.Fatal("RunOnce hid the publish error")
	}
	r := row(t, db, id)
	if r.Status != history.OutboxPending || r.Attempts != 1 || !r.NextAttemptAt.Equal(now.Add(time.Minute)) || r.ClaimedBy != nil {
		t.Fatalf("row %+v, want PENDING attempt 1 due in 1m", r)
	}
}

// design §3: a confirmed row is not released early when marking fails: it
// stays PUBLISHING until its lease passes, then is republished with the
// same message_id.
func TestPublish_ConfirmedRowNotReleasedWhenMarkFails(t *testing.T) {
	t.Parallel()
	db := testenv.NewMigratedSchema(t)
	ctx := context.Background()
	clk := frozen(10, 0, 0)
	start := clk.Now()
	addMember(t, db, 1, true, true)
	id := enqueue(t, db, start, notification.GradeRenewal, 1, start)
	// After the confirm, make every write of PUBLISHED fail.
	pub := &fakePub{hook: func([]publisher.Message) {
		if _, err := db.Pool.Exec(ctx, `ALTER TABLE notification_outbox ADD CONSTRAINT no_published
			CHECK (status <> 'PUBLISHED') NOT VALID`); err != nil {
			t.Errorf("add constraint: %v", err)
		}
	}}
	cfg := testConfig(db, db.Schema, "relay-x")
	if _, err := newRelay(cfg, db, pub, clk, &testenv.AlertRecorder{}).RunOnce(ctx); err == nil {
		t.Fatal("RunOnce hid the failed mark")
	}
	r := row(t, db, id)
	if r.Status != history.OutboxPublishing || str(r.ClaimedBy) != "relay-x" || r.Attempts != 0 {
		t.Fatalf("confirmed row after failed mark: %s by %s attempts %d; want PUBLISHING, kept until the lease passes",
			r.Status, str(r.ClaimedBy), r.Attempts)
	}
	if _, err := db.Pool.Exec(ctx, `ALTER TABLE notification_outbox DROP CONSTRAINT no_published`); err != nil {
		t.Fatal(err)
	}
	// Within the lease nobody republishes it.
	pub2 := &fakePub{}
	r2 := newRelay(testConfig(db, db.Schema, "relay-y"), db, pub2, clk, &testenv.AlertRecorder{})
	clk.Set(start.Add(cfg.Lease - time.Second))
	if st := runOnce(t, r2); st.Claimed != 0 || st.Reclaimed != 0 {
		t.Fatalf("row taken within its lease: %+v", st)
	}
	clk.Set(start.Add(cfg.Lease + time.Second))
	if st := runOnce(t, r2); st.Reclaimed != 1 || st.Published != 1 {
		t.Fatalf("after the lease: %+v", st)
	}
	if m := pub2.published(); len(m) != 1 || m[0].MessageID != notification.MessageID(id) {
		t.Fatalf("republished %+v, want the same message_id", m)
	}
	if r := row(t, db, id); r.Status != history.OutboxPublished {
		t.Fatalf("row %s", r.Status)
	}
}

// design §3: advertising messages are not published at or after 20:40; they
// move to 08:00 the next day (before 08:00 they wait until 08:00 today).
// Non-advertising messages are unaffected.
func TestAdCutoff_DeferredToEightNextDay(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		hh, mm, ss int
		deferTo    func(now time.Time) time.Time // nil: published
	}{
		{"20:39:59 published", 20, 39, 59, nil},
		{"20:40:00 deferred", 20, 40, 0, func(n time.Time) time.Time { return clock.At(n, 8, 0).AddDate(0, 0, 1) }},
		{"23:59:00 deferred", 23, 59, 0, func(n time.Time) time.Time { return clock.At(n, 8, 0).AddDate(0, 0, 1) }},
		{"07:59:00 deferred", 7, 59, 0, func(n time.Time) time.Time { return clock.At(n, 8, 0) }},
		{"08:00:00 published", 8, 0, 0, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			db := testenv.NewMigratedSchema(t)
			clk := frozen(c.hh, c.mm, c.ss)
			now := clk.Now()
			addMember(t, db, 1, true, true)
			addMember(t, db, 2, true, true)
			ad := enqueue(t, db, now, notification.MissionReminder, 1, now)
			info := enqueue(t, db, now, notification.GradeRenewal, 2, now)
			pub := &fakePub{}
			st := runOnce(t, newRelay(testConfig(db, db.Schema, "relay-x"), db, pub, clk, &testenv.AlertRecorder{}))
			if r := row(t, db, info); r.Status != history.OutboxPublished {
				t.Fatalf("non-advertising row is %s at %s", r.Status, now.Format("15:04:05"))
			}
			r := row(t, db, ad)
			if c.deferTo == nil {
				if r.Status != history.OutboxPublished || st.Deferred != 0 {
					t.Fatalf("ad at %s: %s, want PUBLISHED", now.Format("15:04:05"), r.Status)
				}
				return
			}
			want := c.deferTo(now)
			if r.Status != history.OutboxPending || !r.NextAttemptAt.Equal(want) || str(r.StatusReason) != "AD_CUTOFF_DEFERRED" ||
				r.Attempts != 0 || r.ClaimedBy != nil || st.Deferred != 1 {
				t.Fatalf("ad at %s: %s next %s reason %s attempts %d; want PENDING until %s",
					now.Format("15:04:05"), r.Status, r.NextAttemptAt.In(clock.Seoul), str(r.StatusReason), r.Attempts, want)
			}
			for _, m := range pub.published() {
				if m.MessageID == notification.MessageID(ad) {
					t.Fatal("deferred ad was published")
				}
			}
		})
	}
}

// design §3: a row whose scheduled date has passed (Seoul calendar) becomes
// EXPIRED with an alert, and is not published. Today's rows are published
// even just after midnight or just before it.
func TestExpired_PastScheduledDateAlerts(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		hh, mm int
	}{{"00:30", 0, 30}, {"10:00", 10, 0}, {"23:59", 23, 59}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			db := testenv.NewMigratedSchema(t)
			clk := frozen(c.hh, c.mm, 0)
			now := clk.Now()
			addMember(t, db, 1, true, true)
			addMember(t, db, 2, true, true)
			old := enqueue(t, db, now, notification.GradeRenewal, 1, now.AddDate(0, 0, -1))
			today := enqueue(t, db, now, notification.GradeRenewal, 2, now)
			pub := &fakePub{}
			rec := &testenv.AlertRecorder{}
			st := runOnce(t, newRelay(testConfig(db, db.Schema, "relay-x"), db, pub, clk, rec))
			if st.Expired != 1 || st.Published != 1 {
				t.Fatalf("stats %+v", st)
			}
			if r := row(t, db, old); r.Status != history.OutboxExpired || str(r.StatusReason) != "SCHEDULED_DATE_PASSED" {
				t.Fatalf("yesterday's row: %s (%s)", r.Status, str(r.StatusReason))
			}
			if r := row(t, db, today); r.Status != history.OutboxPublished {
				t.Fatalf("today's row: %s", r.Status)
			}
			a := rec.OfKind(history.AlertExpired)
			if len(a) != 1 || a[0].OutboxID != old || a[0].MessageID != notification.MessageID(old) || a[0].DedupKey == "" {
				t.Fatalf("EXPIRED alerts %+v", a)
			}
			if m := pub.published(); len(m) != 1 || m[0].MessageID != notification.MessageID(today) {
				t.Fatalf("published %+v", m)
			}
		})
	}
}

// A final status whose UPDATE committed but whose answer was lost must
// still be alerted: EXPIRED without an alert is a silent loss. Found by a
// random schedule (Postgres link cut while a relay expired rows, saved under
// scenarios/testdata/rapid/TestProperty/). Not parallel: failpoints are
// process-wide.
func TestExpired_AlertsWhenTheStatusAnswerIsLost(t *testing.T) {
	if err := killpoint.ArmFail(killpoint.FailFinishResponse); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(killpoint.DisarmFail)
	db := testenv.NewMigratedSchema(t)
	clk := frozen(10, 0, 0)
	now := clk.Now()
	addMember(t, db, 1, true, true)
	old := enqueue(t, db, now, notification.GradeRenewal, 1, now.AddDate(0, 0, -1))
	rec := &testenv.AlertRecorder{}
	runOnce(t, newRelay(testConfig(db, db.Schema, "relay-x"), db, &fakePub{}, clk, rec))
	if r := row(t, db, old); r.Status != history.OutboxExpired {
		t.Fatalf("row %s, want EXPIRED (the UPDATE committed)", r.Status)
	}
	if a := rec.OfKind(history.AlertExpired); len(a) != 1 || a[0].OutboxID != old {
		t.Fatalf("EXPIRED alerts %+v, want one naming row %d", a, old)
	}
}

// design §3: the relay re-checks consent (and that the member still exists
// and is active) and, outside production, blocks unregistered numbers.
func TestSkip_ConsentAndNonProductionNumbers(t *testing.T) {
	t.Parallel()
	db := testenv.NewMigratedSchema(t)
	ctx := context.Background()
	clk := frozen(10, 0, 0)
	now := clk.Now()
	addMember(t, db, 1, true, true)  // fine
	addMember(t, db, 2, false, true) // consent withdrawn
	addMember(t, db, 3, true, false) // number not registered
	addMember(t, db, 4, true, true)  // deactivated below
	ids := map[int64]int64{}
	for m := int64(1); m <= 5; m++ { // member 5 does not exist
		ids[m] = enqueue(t, db, now, notification.GradeRenewal, m, now)
	}
	if _, err := db.Pool.Exec(ctx, `UPDATE members SET active = false WHERE id = 4`); err != nil {
		t.Fatal(err)
	}
	pub := &fakePub{}
	rec := &testenv.AlertRecorder{}
	st := runOnce(t, newRelay(testConfig(db, db.Schema, "relay-x"), db, pub, clk, rec))
	want := map[int64][2]string{
		1: {history.OutboxPublished, "<nil>"},
		2: {history.OutboxSkipped, "NO_SMS_CONSENT"},
		3: {history.OutboxSkipped, "NON_PRODUCTION_NUMBER"},
		4: {history.OutboxSkipped, "NO_SMS_CONSENT"},
		5: {history.OutboxSkipped, "MEMBER_NOT_FOUND"},
	}
	for m, w := range want {
		r := row(t, db, ids[m])
		if r.Status != w[0] || str(r.StatusReason) != w[1] {
			t.Errorf("member %d: %s (%s), want %s (%s)", m, r.Status, str(r.StatusReason), w[0], w[1])
		}
	}
	if st.Skipped != 4 || st.Published != 1 || len(pub.published()) != 1 {
		t.Fatalf("stats %+v, %d published", st, len(pub.published()))
	}

	// In production, unregistered numbers are sent.
	db2 := testenv.NewMigratedSchema(t)
	addMember(t, db2, 3, true, false)
	id := enqueue(t, db2, now, notification.GradeRenewal, 3, now)
	cfg := testConfig(db2, db2.Schema, "relay-x")
	cfg.Production = true
	runOnce(t, newRelay(cfg, db2, &fakePub{}, clk, rec))
	if r := row(t, db2, id); r.Status != history.OutboxPublished {
		t.Fatalf("production, unregistered number: %s (%s), want PUBLISHED", r.Status, str(r.StatusReason))
	}
}

// A payload that cannot be decoded is FAILED with an alert, not published.
func TestInvalidPayload_FailedWithAlert(t *testing.T) {
	t.Parallel()
	db := testenv.NewMigratedSchema(t)
	ctx := context.Background()
	clk := frozen(10, 0, 0)
	now := clk.Now()
	addMember(t, db, 1, true, true)
	id := enqueue(t, db, now, notification.GradeRenewal, 1, now)
	if _, err := db.Pool.Exec(ctx, `UPDATE notification_outbox SET payload = '"not an object"' WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	pub := &fakePub{}
	rec := &testenv.AlertRecorder{}
	st := runOnce(t, newRelay(testConfig(db, db.Schema, "relay-x"), db, pub, clk, rec))
	if st.Invalid != 1 || len(pub.published()) != 0 {
		t.Fatalf("stats %+v", st)
	}
	if r := row(t, db, id); r.Status != history.OutboxFailed || str(r.StatusReason) != "MALFORMED_PAYLOAD" {
		t.Fatalf("row %s (%s)", r.Status, str(r.StatusReason))
	}
	if a := rec.OfKind(history.AlertRelayFailed); len(a) != 1 || a[0].OutboxID != id {
		t.Fatalf("alerts %+v", a)
	}
}

// The claim reads each payload's member id in SQL for the consent
// re-check (withLookups): a member id that is no integer must not fail the
// claim of its whole batch. Those rows are FAILED as malformed, the good
// row beside them is published.
func TestInvalidMemberID_DoesNotFailTheBatch(t *testing.T) {
	t.Parallel()
	db := testenv.NewMigratedSchema(t)
	ctx := context.Background()
	clk := frozen(10, 0, 0)
	now := clk.Now()
	addMember(t, db, 1, true, true)
	good := enqueue(t, db, now, notification.GradeRenewal, 1, now)
	var bad []int64
	for i, v := range []string{`"2"`, `2.5`, `99999999999999999999`, `{"id": 2}`, `null`} {
		m := int64(i + 2)
		addMember(t, db, m, true, true)
		id := enqueue(t, db, now, notification.GradeRenewal, m, now)
		if _, err := db.Pool.Exec(ctx, `UPDATE notification_outbox SET payload = jsonb_set(payload, '{member_id}', $2::jsonb) WHERE id = $1`, id, v); err != nil {
			t.Fatal(err)
		}
		bad = append(bad, id)
	}
	pub := &fakePub{}
	st := runOnce(t, newRelay(testConfig(db, db.Schema, "relay-x"), db, pub, clk, &testenv.AlertRecorder{}))
	if st.Claimed != 6 || st.Published != 1 || len(pub.published()) != 1 {
		t.Fatalf("stats %+v, %d published; want 6 claimed, 1 published", st, len(pub.published()))
	}
	if r := row(t, db, good); r.Status != history.OutboxPublished {
		t.Fatalf("good row %s (%s)", r.Status, str(r.StatusReason))
	}
	for _, id := range bad {
		// null decodes as 0: no member 0, so it is skipped, not failed.
		if r := row(t, db, id); r.Status != history.OutboxFailed && r.Status != history.OutboxSkipped {
			t.Errorf("row %d: %s (%s), want FAILED or SKIPPED", id, r.Status, str(r.StatusReason))
		}
	}
}

// The relay runs only inside its daily window (08:00–20:55).
func TestInWindow(t *testing.T) {
	t.Parallel()
	r := relay.New(testConfigNoDB(), nil, &fakePub{}, clock.Real{}, &testenv.AlertRecorder{}, quietLog())
	for _, c := range []struct {
		hh, mm int
		in     bool
	}{{7, 59, false}, {8, 0, true}, {12, 0, true}, {20, 55, true}, {20, 56, false}, {0, 0, false}} {
		if got := r.InWindow(clock.At(time.Now(), c.hh, c.mm)); got != c.in {
			t.Errorf("%02d:%02d in window = %v, want %v", c.hh, c.mm, got, c.in)
		}
	}
}

// design §3: a run claims at most BatchSize rows, oldest due first; the rest
// stay PENDING for the next run.
func TestClaim_AtMostBatchSize(t *testing.T) {
	t.Parallel()
	db := testenv.NewMigratedSchema(t)
	clk := frozen(10, 0, 0)
	now := clk.Now()
	var ids []int64
	for m := int64(1); m <= 120; m++ {
		addMember(t, db, m, true, true)
		ids = append(ids, enqueue(t, db, now, notification.GradeRenewal, m, now))
	}
	pub := &fakePub{}
	r := newRelay(testConfig(db, db.Schema, "relay-x"), db, pub, clk, &testenv.AlertRecorder{})
	for i, want := range []int{50, 50, 20, 0} {
		if st := runOnce(t, r); st.Claimed != want || st.Published != want {
			t.Fatalf("run %d: %+v, want %d claimed and published", i+1, st, want)
		}
	}
	// Oldest first: the first batch was the first 50 ids (same due time).
	msgs := pub.published()
	for i := 0; i < 50; i++ {
		if msgs[i].MessageID != notification.MessageID(ids[i]) {
			t.Fatalf("first batch message %d is %s, want %s", i, msgs[i].MessageID, notification.MessageID(ids[i]))
		}
	}
}

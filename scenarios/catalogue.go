package scenarios

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/outboxchaos/outboxchaos/fakevendor"
	"github.com/outboxchaos/outboxchaos/faults"
	"github.com/outboxchaos/outboxchaos/system/broker"
	"github.com/outboxchaos/outboxchaos/system/clock"
	"github.com/outboxchaos/outboxchaos/system/config"
	"github.com/outboxchaos/outboxchaos/system/killpoint"
	"github.com/outboxchaos/outboxchaos/system/notification"
)

// waitLong bounds a wait for something that must happen: generous, so only
// a condition that never comes (a canary, a real bug) reaches it.
const waitLong = 30 * time.Second

// mid is the message_id of outbox row id.
func mid(id int64) string { return notification.MessageID(id) }

// Catalogue returns every named scenario, in SPEC table order.
func Catalogue() []*Scenario {
	return []*Scenario{
		{
			Name: "job-crash-before-commit", Row: "1", PerKind: 2,
			Description: "the batch job dies before its outbox transaction commits; the re-run recomputes the same dedup keys",
			Fault:       "kill-point job.before-commit (SIGKILL) in the job pod",
			Outcome:     "no row after the crash; re-run inserts each once; a third run inserts 0; every notification sent once",
			Drive: func(ctx context.Context, e *Env) error {
				p, err := e.Start(ctx, "job", WithArgs("--kinds", "all"), Killpoint(killpoint.JobBeforeCommit))
				if err != nil {
					return err
				}
				if err := e.ExpectKilled(ctx, p, killpoint.JobBeforeCommit); err != nil {
					return err
				}
				if n, err := e.Count(ctx, `SELECT count(*) FROM notification_outbox`); err != nil || n != 0 {
					return fmt.Errorf("after the crash want 0 outbox rows, got %d (%v)", n, err)
				}
				for run := 1; run <= 2; run++ {
					if err := e.Enqueue(ctx); err != nil {
						return err
					}
					n, err := e.Count(ctx, `SELECT count(*) FROM notification_outbox`)
					if err != nil || n != 12 {
						return fmt.Errorf("after re-run %d want 12 outbox rows, got %d (%v)", run, n, err)
					}
				}
				return e.Pipeline(ctx)
			},
			Expect: allOnce,
		},
		{
			Name: "pending-before-relay", Row: "2",
			Description: "the job committed but no relay has run yet; the rows wait as PENDING and go out on the next run",
			Fault:       "no relay running after the commit; the relay's clock starts one minute later",
			Outcome:     "rows stay PENDING while no relay runs, then each is sent once",
			Drive: func(ctx context.Context, e *Env) error {
				if err := e.Enqueue(ctx); err != nil {
					return err
				}
				if err := e.StartAll(ctx, "worker", "cleanup"); err != nil {
					return err
				}
				n, err := e.Count(ctx, `SELECT count(*) FROM notification_outbox WHERE status = 'PENDING'`)
				if err != nil {
					return err
				}
				// The relay first runs a virtual minute after the commit, so
				// every row is older than any recent window a poller looks at.
				e.Fault("relay-absent", "relay", n == 6, fmt.Sprintf("%d rows PENDING with no relay for one minute", n))
				if _, err := e.Start(ctx, "relay", WithClock(e.ClockIn(time.Minute))); err != nil {
					return err
				}
				return e.WaitCount(ctx, waitLong, 6, `SELECT count(*) FROM notification_outbox WHERE status = 'PUBLISHED'`)
			},
			Expect: allOnce,
		},
		{
			Name: "expired-before-relay", Row: "2*",
			Description: "the relay first runs after the rows' scheduled date has passed",
			Fault:       "clock jump: the relay's virtual clock is the next day",
			Outcome:     "every row EXPIRED with an alert naming it; nothing sent",
			Drive: func(ctx context.Context, e *Env) error {
				if err := e.Enqueue(ctx); err != nil {
					return err
				}
				tomorrow := clock.NewVirtual(nextDay(e.Day, 10, 0), 1).Setting()
				if err := e.StartAll(ctx, "worker", "cleanup"); err != nil {
					return err
				}
				if _, err := e.Start(ctx, "relay", WithClock(tomorrow)); err != nil {
					return err
				}
				err := e.WaitCount(ctx, 20*time.Second, 6, `SELECT count(*) FROM notification_outbox WHERE status = 'EXPIRED'`)
				e.Fault("clock-jump", "relay", err == nil, "relay clock +1 day")
				return err
			},
			Expect: func(e *Env, s State, v Verdict) error {
				return all(lost(6)(e, s, v), alertsOfKind(s, "EXPIRED", 6), ledgerSize(s, 0))
			},
		},
		{
			Name: "relay-crash-after-claim", Row: "3",
			Description: "the relay dies after its claim committed, before publishing",
			Fault:       "kill-point relay.after-claim (SIGKILL) in relay-1",
			Outcome:     "rows stay PUBLISHING until the lease passes, then CLAIM_EXPIRED → PENDING → republished; each sent once",
			Drive: func(ctx context.Context, e *Env) error {
				if err := e.Enqueue(ctx); err != nil {
					return err
				}
				p, err := e.Start(ctx, "relay", Killpoint(killpoint.RelayAfterClaim))
				if err != nil {
					return err
				}
				if err := e.ExpectKilled(ctx, p, killpoint.RelayAfterClaim); err != nil {
					return err
				}
				if n, err := e.Count(ctx, `SELECT count(*) FROM notification_outbox WHERE status = 'PUBLISHING' AND claimed_by = 'relay-1'`); err != nil || n != 6 {
					return fmt.Errorf("want 6 rows PUBLISHING by relay-1 after the crash, got %d (%v)", n, err)
				}
				if err := e.Pipeline(ctx); err != nil {
					return err
				}
				return e.WaitEvent(ctx, 20*time.Second, "reclaim", nil)
			},
			Expect: allOnce,
		},
		{
			Name: "confirm-timeout", Row: "4",
			Description: "no confirm within the 5 s (here 600 ms) timeout: once because the confirms are late, once because the publishes never arrived",
			Fault:       "Toxiproxy latency 1.5 s on RabbitMQ → relay (publishes delivered, confirms late); then a stall on relay → RabbitMQ (publishes lost)",
			Outcome:     "indefinite outcome treated as failure: backoff republish; the queue may hold copies, the inbox lets one through; nothing lost",
			Drive: func(ctx context.Context, e *Env) error {
				if err := e.Enqueue(ctx); err != nil {
					return err
				}
				if err := e.Pipeline(ctx); err != nil {
					return err
				}
				if err := e.WaitFor(ctx, 20*time.Second, "first batch sent", ledgerAtLeast(e, 6)); err != nil {
					return err
				}
				f, err := e.AMQPRelay.Latency(ctx, faults.Downstream, 1500*time.Millisecond, 0)
				if err != nil {
					return err
				}
				if err := e.Enqueue(ctx, WithArgs("--per-kind", "2")); err != nil {
					return err
				}
				werr := e.WaitEvent(ctx, 20*time.Second, "publish", func(ev faults.Event) bool { return ev.Str("outcome") == "timed-out" })
				if err := f.Remove(); err != nil {
					return err
				}
				e.NetFault(f)
				if werr != nil {
					return werr
				}
				// The copies reach handsets before the relay's republish; wait
				// for the republish too, so the relay holds a live connection.
				if err := e.WaitCount(ctx, 20*time.Second, 12, `SELECT count(*) FROM notification_outbox WHERE status = 'PUBLISHED'`); err != nil {
					return err
				}
				// And for the copy to reach a worker, so the run never
				// settles with it in flight.
				if err := awaitCopies(ctx, e, 1); err != nil {
					return err
				}
				// Phase 2: the publishes themselves vanish.
				timedOut := len(e.Events("publish"))
				stall, err := e.AMQPRelay.Timeout(ctx, faults.Upstream, 0)
				if err != nil {
					return err
				}
				if err := e.Enqueue(ctx, WithArgs("--per-kind", "3")); err != nil {
					return err
				}
				werr = e.WaitEvent(ctx, 20*time.Second, "publish", func(ev faults.Event) bool {
					return ev.Str("outcome") == "timed-out" && len(e.Events("publish")) > timedOut
				})
				if err := stall.Remove(); err != nil {
					return err
				}
				e.NetFault(stall)
				return werr
			},
			Expect: func(e *Env, s State, v Verdict) error {
				return all(allOnce(e, s, v), copiesSeen(e, 1))
			},
		},
		{
			Name: "relay-crash-after-confirm", Row: "5",
			Description: "the broker confirmed, the relay dies before marking PUBLISHED",
			Fault:       "kill-point relay.after-confirm (SIGKILL) in relay-1",
			Outcome:     "republished with the same message_id after the lease; the inbox blocks the copy; each sent once",
			Drive: func(ctx context.Context, e *Env) error {
				if err := e.Enqueue(ctx); err != nil {
					return err
				}
				if err := e.StartAll(ctx, "worker", "cleanup"); err != nil {
					return err
				}
				p, err := e.Start(ctx, "relay", Killpoint(killpoint.RelayAfterConfirm))
				if err != nil {
					return err
				}
				if err := e.ExpectKilled(ctx, p, killpoint.RelayAfterConfirm); err != nil {
					return err
				}
				if err := e.WaitFor(ctx, 20*time.Second, "first copies sent", ledgerAtLeast(e, 6)); err != nil {
					return err
				}
				if _, err := e.Start(ctx, "relay"); err != nil {
					return err
				}
				if err := e.WaitCount(ctx, 20*time.Second, 6, `SELECT count(*) FROM notification_outbox WHERE status = 'PUBLISHED'`); err != nil {
					return err
				}
				return awaitCopies(ctx, e, 6)
			},
			Expect: func(e *Env, s State, v Verdict) error {
				return all(allOnce(e, s, v), copiesSeen(e, 6))
			},
		},
		{
			Name: "overlapping-relays", Row: "6", PerKind: 10,
			// Small batches polled every 10 ms; a lease and a confirm timeout
			// no run can outlast, so any row claimed twice was claimed by
			// overlapping runs.
			Configure: func(c *config.Config) {
				c.BatchSize, c.RelayInterval, c.ConfirmTimeout, c.Lease = 5, 10*time.Millisecond, 10*time.Second, 30*time.Second
			},
			Description: "three relay runs overlap on the same outbox",
			Fault:       "a claim held open on the first batch's rows (row locks in an open transaction) while three relay pods poll every 10 ms, batch size 5, 60 rows",
			Outcome:     "SKIP LOCKED hands them disjoint rows: they skip the held batch and take the rest; each sent once",
			Drive: func(ctx context.Context, e *Env) error {
				if err := e.Enqueue(ctx); err != nil {
					return err
				}
				h, held, err := e.holdRows(ctx, 5)
				if err != nil {
					return err
				}
				defer func() { _ = h.Release(context.WithoutCancel(ctx)) }()
				if err := e.StartAll(ctx, "relay", "relay", "relay", "worker", "cleanup"); err != nil {
					return err
				}
				// Either two relays wait on the held rows (a claim that does not
				// skip locked rows) or the relays have claimed every other row
				// around them: the overlap has happened either way.
				how := ""
				werr := e.WaitFor(ctx, waitLong, "relays meeting the held claim", func(ctx context.Context) (bool, error) {
					n, err := h.Waiters(ctx, e.Pool)
					if err != nil || n >= 2 {
						how = fmt.Sprintf("%d relay claims waited on the held rows", n)
						return err == nil, err
					}
					c, err := e.Count(ctx, `SELECT count(*) FROM notification_outbox WHERE status <> 'PENDING'`)
					how = fmt.Sprintf("%d other rows claimed around the held rows %v", c, held)
					return c == 55, err
				})
				rerr := h.Release(ctx)
				e.Fault("held-claim", "relays", werr == nil, how)
				if werr != nil {
					return werr
				}
				if rerr != nil {
					return rerr
				}
				return e.WaitCount(ctx, waitLong, 60, `SELECT count(*) FROM notification_outbox WHERE status = 'PUBLISHED'`)
			},
			Expect: func(e *Env, s State, v Verdict) error {
				return all(allOnce(e, s, v), disjointClaims(e))
			},
		},
		{
			Name: "stale-relay", Row: "3/5",
			Kinds:       []notification.Kind{notification.GradeRenewal, notification.MonthlyAwardsWinning},
			Description: "a relay run loses its lease while waiting for confirms; another run takes the rows over",
			Fault:       "relay-1's confirms held back (its confirm timeout is 60 s) until relay-2 has reclaimed the rows and died after their confirm",
			Outcome:     "the run that lost its lease writes 0 rows; the rows are republished with the same message_id; each sent once",
			Drive: func(ctx context.Context, e *Env) error {
				if err := e.StartAll(ctx, "worker", "cleanup"); err != nil {
					return err
				}
				r1, err := e.Start(ctx, "relay", WithEnv("OUTBOXCHAOS_CONFIRM_TIMEOUT=60s"))
				if err != nil {
					return err
				}
				// One row first, so relay-1 holds a broker connection.
				if err := e.Enqueue(ctx, WithArgs("--kinds", "GRADE_RENEWAL")); err != nil {
					return err
				}
				if err := e.WaitFor(ctx, 20*time.Second, "first row sent", ledgerAtLeast(e, 1)); err != nil {
					return err
				}
				// Hold relay-1's confirms back until relay-2 is dead: removing
				// a latency toxic lets what it held through at once.
				f, err := e.AMQPRelay.Latency(ctx, faults.Downstream, time.Hour, 0)
				if err != nil {
					return err
				}
				// Five rows in one job transaction, so relay-1 claims them in one run.
				if err := e.Enqueue(ctx, WithArgs("--kinds", "MONTHLY_AWARDS_WINNING", "--per-kind", "5")); err != nil {
					return err
				}
				if err := e.WaitCount(ctx, 20*time.Second, 5, `SELECT count(*) FROM notification_outbox WHERE status = 'PUBLISHING' AND claimed_by = $1`, r1.Name()); err != nil {
					return err
				}
				// relay-2 reaches RabbitMQ through the worker's link, without latency.
				r2, err := e.Start(ctx, "relay", Killpoint(killpoint.RelayAfterConfirm),
					WithEnv("OUTBOXCHAOS_AMQP_URL="+replaceHost(e.SB.AMQPURL, e.AMQPWorker.Addr())))
				if err != nil {
					return err
				}
				kerr := e.ExpectKilled(ctx, r2, killpoint.RelayAfterConfirm)
				if err := f.Remove(); err != nil {
					return err
				}
				e.NetFault(f)
				if kerr != nil {
					return kerr
				}
				if err := e.WaitFor(ctx, waitLong, "relay-1's late confirms", func(context.Context) (bool, error) {
					return len(podEvents(e, "mark", r1.Name())) >= 2, nil
				}); err != nil {
					return err
				}
				_, err = e.Start(ctx, "relay")
				return err
			},
			Expect: func(e *Env, s State, v Verdict) error {
				// relay-1's second run: every row's lease was taken over, so
				// its mark must write nothing.
				var second int64 = -1
				if marks := podEvents(e, "mark", "relay-1"); len(marks) >= 2 {
					second, _ = marks[1].Int("count")
				}
				return all(allOnce(e, s, v), expectInt("rows relay-1 marked after losing its lease", int(second), 0),
					expectInt("relay-1 lost-lease events", min(len(podEvents(e, "lost-lease", "relay-1")), 5), 5))
			},
		},
		{
			Name: "worker-crash-before-claim", Row: "7",
			Description: "the worker dies after the pre-checks, before its claim INSERT",
			Fault:       "kill-point worker.before-claim (SIGKILL) in worker-1",
			Outcome:     "not acked → redelivered → the next consumer sends it once",
			Drive: func(ctx context.Context, e *Env) error {
				return crashWorker(ctx, e, Killpoint(killpoint.WorkerBeforeClaim), killpoint.WorkerBeforeClaim)
			},
			Expect: allOnce,
		},
		{
			Name: "worker-crash-after-claim", Row: "8",
			Description: "the worker is killed after its claim committed, before the vendor call",
			Fault:       "kill-point worker.after-claim (SIGKILL) in worker-1",
			Outcome:     "SENDING stays; the redelivery does not send; cleanup turns it into ERROR + alert (lost, visibly)",
			Drive: func(ctx context.Context, e *Env) error {
				return crashWorker(ctx, e, Killpoint(killpoint.WorkerAfterClaim), killpoint.WorkerAfterClaim)
			},
			Expect: func(e *Env, s State, v Verdict) error {
				return all(lost(1)(e, s, v), alertsOfKind(s, "SENDING_TIMEOUT", 1), ledgerSize(s, 5))
			},
		},
		vendorUnknown("vendor-timeout", fakevendor.AcceptHang, fakevendor.Hang,
			"the vendor call times out: once after the message reached the phone, once before"),
		vendorUnknown("vendor-5xx", fakevendor.Accept5xx, fakevendor.Fail5xx,
			"the vendor answers 5xx: once after the message reached the phone, once before"),
		{
			Name: "result-write-fails", Row: "10",
			Description: "the vendor accepted, the result UPDATE fails",
			Fault:       "failpoint worker.result-update in worker-1",
			Outcome:     "error log + alert, ack; SENDING blocks redelivery; cleanup → ERROR + alert; sent once",
			Drive: func(ctx context.Context, e *Env) error {
				return failWorker(ctx, e, killpoint.FailResultUpdate, "result-failed")
			},
			Expect: func(e *Env, s State, v Verdict) error {
				return all(allOnce(e, s, v), alertsOfKind(s, "RESULT_WRITE_FAILED", 1), alertsOfKind(s, "SENDING_TIMEOUT", 1),
					expectInt("ERROR rows that reached the handset", v.ErrorDelivered, 1))
			},
		},
		{
			Name: "worker-crash-before-ack", Row: "11",
			Description: "the result is written, the worker dies before the ack",
			Fault:       "kill-point worker.after-result (SIGKILL) in worker-1",
			Outcome:     "redelivered → history row exists → skipped; sent once",
			Drive: func(ctx context.Context, e *Env) error {
				if err := crashWorker(ctx, e, Killpoint(killpoint.WorkerAfterResult), killpoint.WorkerAfterResult); err != nil {
					return err
				}
				return awaitPeekSkip(ctx, e)
			},
			Expect: func(e *Env, s State, v Verdict) error {
				return all(allOnce(e, s, v), peekSkips(e, 1), inboxAll(s, "SENT"))
			},
		},
		{
			Name: "vendor-rejects", Row: "12", PerKind: 3,
			Description: "definitely-not-sent failures: 401, 403, 429, token failure, connection refused",
			Fault:       "fake vendor answers 401 / 403 / 429×2 / token 500 once; then the vendor link is down when the next batch arrives",
			Outcome:     "claim deleted and retried (in-listener, then the retry queue); each sent once",
			Drive: func(ctx context.Context, e *Env) error {
				rules := []fakevendor.Rule{
					{RefKey: mid(1), Mode: fakevendor.Status401, Times: 1},
					{RefKey: mid(2), Mode: fakevendor.Status403, Times: 1},
					{RefKey: mid(3), Mode: fakevendor.Status429, Times: 2},
					{Mode: fakevendor.TokenFail, Times: 1},
				}
				for _, r := range rules {
					if err := e.Vendor.AddRule(r); err != nil {
						return err
					}
				}
				if err := e.Enqueue(ctx); err != nil {
					return err
				}
				if err := e.Pipeline(ctx); err != nil {
					return err
				}
				// Every response read and written down, so no call is in
				// flight when the link goes down.
				if err := e.WaitCount(ctx, waitLong, 18, `SELECT count(*) FROM notification_histories WHERE status = 'SENT'`); err != nil {
					return err
				}
				// Connection refused: cut the vendor link while the worker is
				// idle (a cut mid-request would be an unknown outcome, row 9)
				// and holds a token, then enqueue more.
				down, err := e.VendorLink.Down()
				if err != nil {
					return err
				}
				if err := e.Enqueue(ctx, WithArgs("--per-kind", "4")); err != nil {
					return err
				}
				werr := e.WaitEvent(ctx, 20*time.Second, "vendor-call", func(ev faults.Event) bool { return ev.Str("code") == "CONN_REFUSED" })
				if err := down.Remove(); err != nil {
					return err
				}
				e.Fault("down", "vendor", werr == nil, "connection refused seen by the worker")
				if werr != nil {
					return werr
				}
				if err := e.WaitFor(ctx, 20*time.Second, "all sent", ledgerAtLeast(e, 24)); err != nil {
					return err
				}
				fired := e.Vendor.Fired()
				for _, m := range []fakevendor.Mode{fakevendor.Status401, fakevendor.Status403, fakevendor.Status429, fakevendor.TokenFail} {
					e.Fault("vendor", string(m), fired[m] > 0, fmt.Sprintf("fired %d times", fired[m]))
				}
				return nil
			},
			Expect: allOnce,
		},
		{
			Name: "worker-crash-after-send", Row: "8/10",
			Description: "the worker dies after the vendor accepted, before the result UPDATE",
			Fault:       "kill-point worker.after-send (SIGKILL) in worker-1",
			Outcome:     "redelivered → its SENDING claim blocks a resend; cleanup → ERROR + alert; the phone got it once",
			Drive: func(ctx context.Context, e *Env) error {
				if err := crashWorker(ctx, e, Killpoint(killpoint.WorkerAfterSend), killpoint.WorkerAfterSend); err != nil {
					return err
				}
				return awaitPeekSkip(ctx, e)
			},
			Expect: func(e *Env, s State, v Verdict) error {
				return all(allOnce(e, s, v), peekSkips(e, 1), alertsOfKind(s, "SENDING_TIMEOUT", 1),
					expectInt("ERROR rows that reached the handset", v.ErrorDelivered, 1))
			},
		},
		{
			Name: "worker-shutdown-mid-send", Row: "§5",
			Description: "the worker is asked to stop (SIGTERM) while a vendor call is in flight",
			Fault:       "SIGTERM to worker-1 during its vendor call for " + mid(1) + " (the vendor accepts, then hangs)",
			Outcome:     "steps 3–5 finish despite the stop: ERROR + alert for the unknown outcome, no resend by the next worker",
			Drive: func(ctx context.Context, e *Env) error {
				if err := e.Vendor.AddRule(fakevendor.Rule{RefKey: mid(1), Mode: fakevendor.AcceptHang}); err != nil {
					return err
				}
				if err := e.Enqueue(ctx); err != nil {
					return err
				}
				w, err := e.Start(ctx, "worker")
				if err != nil {
					return err
				}
				if err := e.StartAll(ctx, "relay", "cleanup"); err != nil {
					return err
				}
				if err := e.WaitFor(ctx, 20*time.Second, "vendor call for "+mid(1)+" in flight", func(context.Context) (bool, error) {
					return e.Vendor.Count(mid(1)) == 1, nil
				}); err != nil {
					return err
				}
				n, err := e.Count(ctx, `SELECT count(*) FROM notification_histories WHERE message_id = $1 AND status = 'SENDING'`, mid(1))
				if err != nil {
					return err
				}
				e.Logf("harness", "SIGTERM %s while its vendor call is in flight", w.Name())
				stopErr := w.Stop(10 * time.Second)
				e.Fault("sigterm", w.Name(), n == 1, "during the vendor call")
				if stopErr != nil {
					return stopErr
				}
				_, err = e.Start(ctx, "worker")
				return err
			},
			Expect: func(e *Env, s State, v Verdict) error {
				return all(allOnce(e, s, v), alertsOfKind(s, "VENDOR_UNKNOWN", 1),
					expectInt("ERROR rows that reached the handset", v.ErrorDelivered, 1))
			},
		},
		{
			Name: "unroutable-publish", Row: "§4",
			Description: "the exchange has no binding for the main queue when the relay publishes",
			Fault:       "the operator unbinds the main queue; mandatory publishes come back as basic.return (and are still acked)",
			Outcome:     "a returned message is a failure: PENDING with backoff, republished once the binding is back; sent once",
			Drive: func(ctx context.Context, e *Env) error {
				if err := e.Pipeline(ctx); err != nil {
					return err
				}
				if err := e.WaitFor(ctx, 20*time.Second, "relay and worker up", func(context.Context) (bool, error) {
					return countEvents(e, "start", "relay") == 1 && countEvents(e, "consume-start", "worker") >= 1, nil
				}); err != nil {
					return err
				}
				if err := e.binding(false); err != nil {
					return err
				}
				if err := e.Enqueue(ctx); err != nil {
					return err
				}
				werr := e.WaitEvent(ctx, 20*time.Second, "publish", func(ev faults.Event) bool { return ev.Str("outcome") == "returned" })
				e.Fault("unbind", "main queue", werr == nil, "publish returned")
				if err := e.binding(true); err != nil {
					return err
				}
				return werr
			},
			Expect: func(e *Env, s State, v Verdict) error {
				returned := map[int64]bool{}
				for _, ev := range e.Events("publish") {
					if ev.Str("outcome") == "returned" {
						id, _ := ev.Int("outbox_id")
						returned[id] = true
					}
				}
				var errs []error
				for _, r := range s.Outbox {
					if returned[r.ID] && r.Attempts == 0 {
						errs = append(errs, fmt.Errorf("row %d was returned but not counted as a failed attempt", r.ID))
					}
				}
				if len(returned) == 0 {
					errs = append(errs, fmt.Errorf("no publish was returned"))
				}
				return all(append(errs, allOnce(e, s, v))...)
			},
		},
		{
			Name: "claim-response-lost", Row: "extra",
			Description: "the claim INSERT commits but its response never reaches the worker",
			Fault:       "failpoint worker.claim-response in worker-1 (error after the commit)",
			Outcome:     "requeued; the copy finds its own SENDING row and does not send; cleanup → ERROR + alert (lost, visibly)",
			Drive: func(ctx context.Context, e *Env) error {
				return failWorker(ctx, e, killpoint.FailClaimResponse, "claim-failed")
			},
			Expect: func(e *Env, s State, v Verdict) error {
				return all(lost(1)(e, s, v), alertsOfKind(s, "SENDING_TIMEOUT", 1))
			},
		},
		{
			Name: "anniversary-outbox-fails", Row: "extra", PerKind: 2,
			Kinds:       []notification.Kind{notification.AnniversaryCoupon},
			Description: "the anniversary job issued the coupon, then its outbox insert fails",
			Fault:       "failpoint job.anniversary-outbox-insert in the job pod",
			Outcome:     "the notification is lost on purpose (never twice) with an ANNIVERSARY_LOST alert; the other is sent once",
			Drive: func(ctx context.Context, e *Env) error {
				p, err := e.Run(ctx, "job", WithArgs("--kinds", e.Scenario.kindsArg()), Failpoint(killpoint.FailAnniversaryOutbox))
				if p != nil {
					e.Fault("failpoint", p.Name(), FailpointFired(p, killpoint.FailAnniversaryOutbox), killpoint.FailAnniversaryOutbox)
				}
				if err != nil {
					return err
				}
				if n, err := e.Count(ctx, `SELECT count(*) FROM coupons`); err != nil || n != 2 {
					return fmt.Errorf("want 2 coupons issued, got %d (%v)", n, err)
				}
				return e.Pipeline(ctx)
			},
			Expect: func(e *Env, s State, v Verdict) error {
				return all(lost(1)(e, s, v), alertsOfKind(s, "ANNIVERSARY_LOST", 1), ledgerSize(s, 1))
			},
		},
		{
			Name: "ad-cutoff-deferral", Row: "2*",
			Start:       func(now time.Time) time.Time { return clock.At(now, 20, 39).Add(50 * time.Second) },
			Description: "advertising messages reach the relay after 20:40",
			Fault:       "clock: the relay starts at 20:40:00, then a relay runs the next day at 08:00",
			Outcome:     "ads deferred to 08:00 next day (not sent after the cut-off); past their scheduled date they are EXPIRED + alert; the rest sent once",
			Drive: func(ctx context.Context, e *Env) error {
				if err := e.Enqueue(ctx); err != nil {
					return err
				}
				if err := e.StartAll(ctx, "worker", "cleanup"); err != nil {
					return err
				}
				cut := clock.NewVirtual(clock.At(e.Day, 20, 40), 1).Setting()
				r1, err := e.Start(ctx, "relay", WithClock(cut))
				if err != nil {
					return err
				}
				resume := nextDay(e.Day, 8, 0)
				err = e.WaitCount(ctx, 20*time.Second, 2, `SELECT count(*) FROM notification_outbox
					WHERE advertising AND status = 'PENDING' AND status_reason = 'AD_CUTOFF_DEFERRED' AND next_attempt_at = $1`, resume)
				e.Fault("clock", "relay 20:40", err == nil, "ads deferred to "+resume.Format("2006-01-02 15:04"))
				if err != nil {
					return err
				}
				if err := e.WaitFor(ctx, 20*time.Second, "non-ads sent", ledgerAtLeast(e, 4)); err != nil {
					return err
				}
				if err := r1.Stop(5 * time.Second); err != nil {
					return err
				}
				if _, err := e.Start(ctx, "relay", WithClock(clock.NewVirtual(resume, 1).Setting())); err != nil {
					return err
				}
				return e.WaitCount(ctx, 20*time.Second, 2, `SELECT count(*) FROM notification_outbox WHERE status = 'EXPIRED'`)
			},
			Expect: func(e *Env, s State, v Verdict) error {
				return all(lost(2)(e, s, v), alertsOfKind(s, "EXPIRED", 2), ledgerSize(s, 4))
			},
		},
		{
			Name: "parking-replay", Row: "extra", Kinds: []notification.Kind{notification.GradeRenewal},
			Description: "an operator moves a parked message back to the main queue, twice",
			Fault:       "vendor 401 until parked; then the operator replays the parked copy, and replays it again after it was sent",
			Outcome:     "the first replay sends it once; the replay after it was sent is absorbed by the inbox",
			Drive: func(ctx context.Context, e *Env) error {
				if err := e.Vendor.AddRule(fakevendor.Rule{RefKey: mid(1), Mode: fakevendor.Status401}); err != nil {
					return err
				}
				if err := e.Enqueue(ctx); err != nil {
					return err
				}
				if err := e.Pipeline(ctx); err != nil {
					return err
				}
				if err := e.WaitEvent(ctx, 30*time.Second, "park", nil); err != nil {
					return err
				}
				e.Vendor.ResetRules()
				msg, err := e.takeParked()
				if err != nil {
					return err
				}
				e.Fault("parked", mid(1), msg.MessageId == mid(1), "reason "+fmt.Sprint(msg.Headers[broker.HeaderFailureReason]))
				if err := e.replay(msg); err != nil {
					return err
				}
				if err := e.WaitFor(ctx, 20*time.Second, "sent after replay", ledgerAtLeast(e, 1)); err != nil {
					return err
				}
				if err := e.WaitCount(ctx, 20*time.Second, 1, `SELECT count(*) FROM notification_histories WHERE status = 'SENT'`); err != nil {
					return err
				}
				if err := e.replay(msg); err != nil {
					return err
				}
				return e.WaitFor(ctx, 20*time.Second, "second replay absorbed", func(context.Context) (bool, error) {
					return len(peekSkipEvents(e)) >= 1, nil
				})
			},
			Expect: func(e *Env, s State, v Verdict) error {
				return all(allOnce(e, s, v), alertsOfKind(s, "PARKED", 1))
			},
		},
		{
			Name: "schema-race", Row: "§7",
			Description: "six instances migrate a fresh schema while another instance is part-way through its migration",
			Fault:       "a migration held open (its advisory lock taken, CREATE TABLE members uncommitted) until six migrate pods wait on it",
			Outcome:     "they wait for pg_advisory_lock and then all succeed (without it: 23505 on pg_type_typname_nsp_index); the pipeline then sends each once",
			Drive: func(ctx context.Context, e *Env) error {
				h, err := e.holdMigration(ctx)
				if err != nil {
					return err
				}
				defer func() { _ = h.Release(context.WithoutCancel(ctx)) }()
				var pods []*faults.Pod
				for i := 0; i < 6; i++ {
					p, err := e.Start(ctx, "migrate")
					if err != nil {
						return err
					}
					pods = append(pods, p)
				}
				werr := e.WaitFor(ctx, waitLong, "six migrators at the held migration", func(ctx context.Context) (bool, error) {
					n, err := migratorsWaiting(ctx, e, h)
					return n == len(pods), err
				})
				rerr := h.Release(ctx)
				e.Fault("held-migration", "6 migrate pods", werr == nil, "every pod waited on the half-done migration")
				if werr != nil {
					return werr
				}
				if rerr != nil {
					return rerr
				}
				for _, p := range pods {
					if err := e.WaitExit(ctx, p, waitLong); err != nil {
						return err
					}
					if p.ExitCode() != 0 {
						return fmt.Errorf("%s failed (exit %d): %s", p.Name(), p.ExitCode(), p.Output())
					}
				}
				if err := e.Enqueue(ctx); err != nil {
					return err
				}
				return e.Pipeline(ctx)
			},
			Expect: allOnce,
		},
		{
			Name: "broker-restart", Row: "extra", PerKind: 5,
			Description: "every RabbitMQ connection is cut mid-stream and refused for a while",
			Fault:       "both RabbitMQ links down for 500 ms after the 5th message reached a handset",
			Outcome:     "relay and worker reconnect; nothing lost, nothing twice",
			Drive: func(ctx context.Context, e *Env) error {
				if err := e.Enqueue(ctx); err != nil {
					return err
				}
				if err := e.Pipeline(ctx); err != nil {
					return err
				}
				if err := e.WaitFor(ctx, 20*time.Second, "stream under way", ledgerAtLeast(e, 5)); err != nil {
					return err
				}
				var downs []*faults.Fault
				for _, p := range []*faults.Proxy{e.AMQPRelay, e.AMQPWorker} {
					f, err := p.Down()
					if err != nil {
						return err
					}
					downs = append(downs, f)
				}
				err := e.WaitEvent(ctx, 10*time.Second, "reconnect", nil)
				for _, f := range downs {
					if rerr := f.Remove(); rerr != nil {
						return rerr
					}
					e.NetFault(f)
				}
				return err
			},
			Expect: allOnce,
		},
	}
}

// vendorUnknown builds row 9: two notifications meet an indefinite vendor
// failure, one after it reached the phone (sent) and one before (not sent).
func vendorUnknown(name string, sent, notSent fakevendor.Mode, desc string) *Scenario {
	return &Scenario{
		Name: name, Row: "9", Description: desc,
		Fault:   fmt.Sprintf("fake vendor %s for %s and %s for %s", sent, mid(1), notSent, mid(2)),
		Outcome: "both ERROR + alert, never retried; the one that went out reached the phone once, the other is lost visibly",
		Drive: func(ctx context.Context, e *Env) error {
			for _, r := range []fakevendor.Rule{{RefKey: mid(1), Mode: sent}, {RefKey: mid(2), Mode: notSent}} {
				if err := e.Vendor.AddRule(r); err != nil {
					return err
				}
			}
			if err := e.Enqueue(ctx); err != nil {
				return err
			}
			if err := e.Pipeline(ctx); err != nil {
				return err
			}
			err := e.WaitCount(ctx, 20*time.Second, 2, `SELECT count(*) FROM notification_histories WHERE status = 'ERROR'`)
			fired := e.Vendor.Fired()
			e.Fault("vendor", string(sent), fired[sent] > 0, mid(1))
			e.Fault("vendor", string(notSent), fired[notSent] > 0, mid(2))
			return err
		},
		Expect: func(e *Env, s State, v Verdict) error {
			calls := map[string]int{}
			for _, c := range e.Vendor.CallLog() {
				calls[c.RefKey]++
			}
			return all(lost(1)(e, s, v), alertsOfKind(s, "VENDOR_UNKNOWN", 2),
				expectInt("ERROR rows that reached the handset", v.ErrorDelivered, 1),
				expectInt("vendor calls for "+mid(1), calls[mid(1)], 1),
				expectInt("vendor calls for "+mid(2), calls[mid(2)], 1))
		},
	}
}

// awaitPeekSkip waits until a redelivered copy was skipped at the peek (its
// history row exists), so the run never settles with the copy in flight.
func awaitPeekSkip(ctx context.Context, e *Env) error {
	return e.WaitFor(ctx, waitLong, "the redelivery skipped at the peek", func(context.Context) (bool, error) {
		return len(peekSkipEvents(e)) >= 1, nil
	})
}

// awaitCopies waits until n messages were delivered to a worker more than
// once: the copies a fault made have reached the inbox, not just the queue.
func awaitCopies(ctx context.Context, e *Env, n int) error {
	return e.WaitFor(ctx, waitLong, fmt.Sprintf("%d messages delivered twice", n), func(context.Context) (bool, error) {
		return copiesSeen(e, n) == nil, nil
	})
}

// migratorsWaiting counts the migrate pods waiting on the held migration:
// polling the advisory lock, or blocked behind the uncommitted table.
func migratorsWaiting(ctx context.Context, e *Env, h *Hold) (int, error) {
	bs, err := e.podBackends(ctx, "migrate")
	if err != nil {
		return 0, err
	}
	n := 0
	for _, b := range bs {
		if strings.Contains(b.Query, "pg_try_advisory_lock") || slices.Contains(b.BlockedBy, h.pid) {
			n++
		}
	}
	return n, nil
}

// crashWorker kills worker-1 at a kill-point on its first message, then
// restarts it.
func crashWorker(ctx context.Context, e *Env, opt PodOption, point string) error {
	if err := e.Enqueue(ctx); err != nil {
		return err
	}
	w, err := e.Start(ctx, "worker", opt)
	if err != nil {
		return err
	}
	if err := e.StartAll(ctx, "relay", "cleanup"); err != nil {
		return err
	}
	if err := e.ExpectKilled(ctx, w, point); err != nil {
		return err
	}
	_, err = e.Restart(ctx, w)
	return err
}

// failWorker arms a failpoint in worker-1 and waits for the event its
// injected failure logs.
func failWorker(ctx context.Context, e *Env, point, event string) error {
	if err := e.Enqueue(ctx); err != nil {
		return err
	}
	w, err := e.Start(ctx, "worker", Failpoint(point))
	if err != nil {
		return err
	}
	if err := e.StartAll(ctx, "relay", "cleanup"); err != nil {
		return err
	}
	err = e.WaitEvent(ctx, 20*time.Second, event, nil)
	e.Fault("failpoint", w.Name(), FailpointFired(w, point), point)
	return err
}

// takeParked removes the first parked message (the operator's copy).
func (e *Env) takeParked() (msg amqp.Delivery, err error) {
	err = e.withChannel(func(ch *amqp.Channel) error {
		var ok bool
		var gerr error
		msg, ok, gerr = ch.Get(broker.NamesFor(e.SB.Prefix).Parking, true)
		if gerr != nil || !ok {
			return fmt.Errorf("read parking queue: ok=%v err=%v", ok, gerr)
		}
		return nil
	})
	return msg, err
}

// replay publishes an operator's copy back to the main queue, unchanged.
func (e *Env) replay(msg amqp.Delivery) error {
	return e.withChannel(func(ch *amqp.Channel) error {
		if err := ch.Confirm(false); err != nil {
			return fmt.Errorf("confirm mode: %w", err)
		}
		dc, err := ch.PublishWithDeferredConfirm(broker.NamesFor(e.SB.Prefix).Exchange, broker.KeySend, true, false, amqp.Publishing{
			MessageId: msg.MessageId, Headers: msg.Headers, Body: msg.Body, DeliveryMode: amqp.Persistent, ContentType: msg.ContentType,
		})
		if err != nil {
			return fmt.Errorf("replay %s: %w", msg.MessageId, err)
		}
		if !dc.Wait() {
			return fmt.Errorf("replay %s: nacked", msg.MessageId)
		}
		e.Logf("operator", "replayed %s from parking to the main queue", msg.MessageId)
		return nil
	})
}

// binding adds or removes the main queue's binding, as an operator would.
func (e *Env) binding(bound bool) error {
	return e.withChannel(func(ch *amqp.Channel) error {
		n := broker.NamesFor(e.SB.Prefix)
		var err error
		if bound {
			err = ch.QueueBind(n.Main, broker.KeySend, n.Exchange, false, nil)
		} else {
			err = ch.QueueUnbind(n.Main, broker.KeySend, n.Exchange, nil)
		}
		if err != nil {
			return fmt.Errorf("change binding of %s: %w", n.Main, err)
		}
		e.Logf("operator", "main queue binding: %v", bound)
		return nil
	})
}

// Package bench measures the notification pipeline's throughput side by side
// with the raw limits of the infrastructure under it and with two classic
// relay designs, all in one run against the same PostgreSQL and RabbitMQ. The
// machine is shared and absolute numbers drift, so the report speaks in
// ratios of measurements taken minutes apart in the same process.
//
// What one run measures (see Run and the generated reports/PERFORMANCE.md):
//
//   - raw limits, with nothing but the client libraries: publish with
//     confirms to a quorum queue (each confirm waited for, and a sliding
//     window of 50 in flight), the relay's SQL alone (claim 50 with SKIP
//     LOCKED, mark PUBLISHED), the inbox SQL alone (claim INSERT, result
//     UPDATE), consume and ack with prefetch 1;
//   - system/relay draining a PENDING backlog with 1 and 2 replicas, batch
//     50 and a larger batch, with the real system/publisher;
//   - the bench-only baselines of package bench/baseline: the seed-style
//     relay (one publish, one confirm, one mark per row) and the lock-holding
//     relay (row locks held over the publish);
//   - system/worker draining a queue backlog against the fake vendor at 0 ms
//     and 20 ms latency, single active consumer, prefetch 1;
//   - the relay's peak RSS in a separate process while it drains part of a
//     1,000,000-row backlog, and EXPLAIN of relay.ClaimWithLookupsSQL at that size.
//
// Every run works in its own sandbox (system/sandbox: one Postgres schema,
// one queue-name prefix) and removes every queue it declared.
package bench

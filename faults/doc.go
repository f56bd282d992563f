// Package faults owns the injection of failures into a running pipeline and
// the record of what was injected: it is the harness's hands, while system/
// is the thing under test and scenarios/ decides what to break and when.
//
// # Faults as values
//
// A [Fault] is one fault as a value, in the shape of etcd robustness's
// Failpoint: Inject, Recover, Fired (did the pipeline meet it, with the
// evidence) and a description. One type per family: [Killpoint],
// [Failpoint] and [ClockStep] are armed in a pod as it starts ([PodFault]);
// [LinkDown], [LinkLatency], [LinkStall] act on a link; [VendorRule]
// programs the fake vendor; [Sigterm], [Unbind] and [ReplayParked] are an
// operator's actions; [HoldRows] and [HoldMigration] hold a lock open as a
// barrier. A scenario writes a fault as a [Spec] (JSON) and [Spec.Build]
// makes the value, rejecting unknown kinds and names. The [Engine] injects
// faults into a run's [World], keeps the ledger of what was injected and
// whether it fired, and always recovers what it injected.
//
// The files:
//
//   - fault.go, spec.go, engine.go: the interface, the specs, the engine.
//   - podfaults.go, livefaults.go, operator.go, hold.go: the families.
//   - network.go: a Toxiproxy server embedded in the harness process. Every
//     connection from a pod to Postgres, RabbitMQ or the vendor goes through a
//     [Proxy] on 127.0.0.1, where latency, stalls, resets, byte limits and
//     outages are switched on and off. toxic.go holds what every network
//     fault reports; counttoxic.go the counting toxic that observes traffic.
//   - process.go: the pipeline's components run as child processes ([Pod]).
//     They are killed, stopped, restarted and armed with the kill-points of
//     system/killpoint through their environment; their JSON log lines are
//     parsed into [history.Event] values (history.ParseLine) for the checker.
//   - clock.go: the shared virtual clock setting handed to every pod.
//   - wait.go: polling an observable condition under a deadline ([WaitFor]).
//   - timeline.go: one ordered, human-readable record of what every pod said
//     and every fault did ([Timeline]), kept as an artifact of failing runs.
//
// # Reports
//
// Every network fault is a [Toxic] that records when it was injected, when it
// was removed and whether it fired, i.e. whether traffic actually reached it
// while it was active (see [Toxic.Fired]). A scenario whose fault never fired
// proved nothing and must say so; [Toxic.Report] gives a [FaultReport] for
// that purpose, and the [Engine]'s ledger turns every fault's answer into
// the checker's fault records.
//
// # Determinism and the seed
//
// Toxiproxy draws from the global math/rand source in two places: whether a
// toxic applies to a connection (its toxicity) and the jitter of a latency
// toxic. Since Go 1.24 rand.Seed is a no-op, so that source cannot be pinned.
// This package therefore never leaves a decision to it: every toxic is added
// with toxicity 1.0 (always applies; math/rand's Float32 is below 1), and a
// latency toxic is always added with jitter 0. When a jitter is asked for,
// [Network] draws one offset in [-jitter, +jitter) per fault from its own
// rand.New(rand.NewSource(seed)) and adds it to the latency. The same seed and
// the same sequence of fault calls on a Network thus give the same effective
// latencies; the drawn value is in [Toxic.Detail]. [Network.Seed] returns the
// seed so that reports can print it.
//
// # How faults are observed
//
// Toxiproxy only updates its byte metrics when a connection ends, which is
// too late to tell whether a fault fired on a long-lived connection. Each
// Proxy therefore carries, in both directions, a pass-through counting toxic
// (type "outboxchaos_count") placed first in the chain, so it sees every byte
// read from either side before any fault toxic acts on it, and every
// connection opened or closed. [Proxy.Heal] removes every other toxic and
// keeps the counters.
//
// Toxiproxy's own logging (zerolog) is discarded unless the environment
// variable OUTBOXCHAOS_TOXIPROXY_DEBUG is set to a non-empty value, in which
// case it goes to stderr. This package logs through log/slog at debug level.
package faults

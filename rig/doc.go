// Package rig is the test rig the harness's faults act on: the pipeline's
// components as child processes ([Pod]) and their [Supervisor], the
// Toxiproxy server embedded in the harness process and its links
// ([Network], [Proxy]), the timeline of
// what every pod said and every fault did ([Timeline]), waits with
// deadlines ([WaitFor]) and the pods' shared clock setting. Package faults
// decides what to break and keeps the ledger; it sees this package only
// through its own handles (faults.World). scenarios/ assembles one run's
// world from these parts: the rig is the apparatus, a run's world is one
// use of it.
//
// The files:
//
//   - process.go: a pod is one child process of the pipeline. It is
//     killed, stopped, restarted and armed with the kill-points of
//     system/killpoint through its environment; its JSON log lines are
//     parsed into [Event] values for the checker. process_linux.go and
//     process_other.go hold the platform's part (process groups, whether
//     a process is stopped).
//   - network.go: a Toxiproxy server embedded in the harness process.
//     Every connection from a pod to Postgres, RabbitMQ or the vendor goes
//     through a [Proxy] on 127.0.0.1, where latency, stalls and outages
//     are switched on and off. toxic.go holds what every network fault
//     reports ([Toxic], [FaultReport]); counttoxic.go the counting toxic
//     that observes traffic; gate.go the toxic that carries the latency
//     and stall faults, which sits in every connection from the start.
//   - supervisor.go: a run's pods ([Supervisor]): every pod started, the
//     supervised ones restarted when they die, as a deployment would, all
//     stopped at the end.
//   - backends.go: what PostgreSQL says about the pods' connections
//     ([PodBackends]).
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
// that purpose.
//
// # Determinism and the seed
//
// Toxiproxy draws from the global math/rand source in two places: whether a
// toxic applies to a connection (its toxicity) and the jitter of a latency
// toxic. Since Go 1.24 rand.Seed is a no-op, so that source cannot be pinned.
// This package therefore never leaves a decision to it: its two toxics are
// added with toxicity 1.0 (always applies; math/rand's Float32 is below 1),
// and latency is the gate's, which draws nothing. When a jitter is asked
// for, [Network] draws one offset in [-jitter, +jitter) per fault from its
// own rand.New(rand.NewSource(seed)) and adds it to the latency. The same
// seed and the same sequence of fault calls on a Network thus give the same
// effective latencies; the drawn value is in [Toxic.Detail]. [Network.Seed]
// returns the seed so that reports can print it.
//
// # Why faults never change a toxic chain
//
// Toxiproxy adds or removes a toxic under its collection's lock and waits
// for every connection's toxics to let go of a chunk. A latency toxic that
// holds one for a connection whose client has gone waits for a writer that
// waits for that lock, and the proxy never answers again. So each stream's
// chain is fixed when the proxy starts (the counting toxic, then the gate),
// and a fault changes only the gate's state, which every connection reads.
//
// # How faults are observed
//
// Toxiproxy only updates its byte metrics when a connection ends, which is
// too late to tell whether a fault fired on a long-lived connection. Each
// Proxy therefore carries, in both directions, a pass-through counting toxic
// (type "outboxchaos_count") placed first in the chain, so it sees every byte
// read from either side before any fault toxic acts on it, and every
// connection opened or closed. [Proxy.Heal] ends every fault and keeps the
// counters.
//
// Toxiproxy's own logging (zerolog) is discarded unless the environment
// variable OUTBOXCHAOS_TOXIPROXY_DEBUG is set to a non-empty value, in which
// case it goes to stderr. Package rig logs through log/slog at debug level.
package rig

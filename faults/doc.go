// Package faults owns the injection of failures into a running pipeline and
// the record of what was injected: it is the harness's hands, while system/
// is the thing under test and scenarios/ decides what to break and when.
//
// # Faults as values
//
// A [Fault] is one fault as a value, in the shape of etcd robustness's
// Failpoint: Inject, Recover, Fired (did the pipeline meet it, with the
// evidence) and a description. One type per family: [Killpoint],
// [Failpoint], [Pausepoint], [CrashPoint] and [ClockStep] are armed in a
// pod as it starts ([PodFault]); [LinkDown], [LinkLatency], [LinkStall] act
// on a link; [VendorRule] programs the fake vendor; [Sigterm], [Resume],
// [Unbind] and [ReplayParked] are an operator's actions; [Poison] is a
// message no relay wrote; [WithdrawConsent] is the business changing its
// mind; [HoldRows], [HoldMigration], [HoldTable] and [HoldInboxRow] hold a
// lock open as a barrier; [NodeCrash], [NodeRestart], [NodeFreeze] and
// [LeaderLoss] act on a run's own containers ([NodeControl]); [Kill] and
// [RollingRestart] are the simulated day's worker kills and deploys. A scenario writes
// a fault as a [Spec] (JSON) and [Spec.Build] makes the value, rejecting
// unknown kinds and names. The [Engine] injects faults into a run's
// [World], keeps the ledger of what was injected and whether it fired, and
// always recovers what it injected; its ledger runs on the wall clock or,
// for a simulated day, on the virtual one ([Engine.SetClock]).
//
// # The world
//
// Faults act on a run's world — its pods, links, vendor, database and
// broker — which package rig implements and the scenario engine hands
// over. They see it only through [World] and its handles ([PodHandle],
// [LinkHandle], [ToxicHandle]): what a fault may see of a pod or do to a
// link, never the concrete pods and proxies, so a fault's file says all it
// does.
//
// The files:
//
//   - fault.go, spec.go, engine.go: the interface and the world's handles,
//     the specs, the engine.
//   - podfaults.go (kill-point, failpoint, clock), pause.go (pause-point,
//     resume), crashfault.go (crash-point): faults armed in a pod.
//   - livefaults.go: link faults and the vendor's modes.
//   - operator.go: an operator's actions and the lock holds; hold.go the
//     held transactions ([Hold]) behind them.
//   - poison.go, consent.go: a poison message, a withdrawn consent.
//   - infra.go: the infrastructure faults on a run's containers.
//   - kill.go: SIGKILL of a running pod; deploy.go: a deployment's rolling
//     restart, in a world that runs deployments ([Deployer], the
//     simulator's).
package faults

// Package run runs a scenario (package scenario) against the real
// pipeline on real Postgres and RabbitMQ, and has the checker judge what
// actually happened.
//
// The engine (engine.go) carries out each step's verb and probes each
// condition, through registries keyed by the language's names (runs,
// holding), and records every fault through faults.Engine. A run's world
// (Env: world.go, pods.go, observe.go, operator.go) is its schema and
// queues, its pods, a proxy per link, the fake vendor and the clock. After
// the steps the runner lets the pipeline settle (settle.go, jumping the
// clock where nothing but time is left: jump.go), stops the pods, then
// recovers the faults, snapshots the final state and hands the recorded
// run to the checker for a verdict; a failing run writes that record
// under artifacts/.
//
// It sits behind the internal boundary: a user of the harness names what
// it needs of a run through package scenarios.
package run

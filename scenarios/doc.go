// Package scenarios reproduces every row of the failure table (see
// docs/design.md), and the other loss windows the design names, against the
// real pipeline on real Postgres and RabbitMQ, and has the checker judge
// what actually happened.
//
// A scenario is a value (package scenario): a workload, a list of steps
// (start pods, enqueue, await a count or an event, hold faults in place
// until a condition) and its row's expectations as checker rules. It
// prints and saves as JSON and replays from it. The catalogue's entries and the random schedules
// (package explore) are both such values and run on the same engine
// (engine.go), which records every fault through faults.Engine. After the
// steps the runner lets the pipeline settle, snapshots the final state and
// hands the recorded run to the checker package for a verdict; a failing
// run writes that record under artifacts/.
//
// To add a scenario: add one entry to Catalogue.
package scenarios

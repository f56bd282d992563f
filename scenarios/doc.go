// Package scenarios is the named failure cases and what a user of the
// harness needs to run them.
//
// The catalogue (Catalogue, Lookup) reproduces every row of the failure
// table (see docs/design.md), and the other loss windows the design
// names, each written as a value of the scenario language (package
// scenario: a workload, a list of steps, its row's expectations as
// checker rules) with the words of words.go; it prints and saves as JSON
// and replays from it. The random schedules (package explore) are the
// same values. Run runs one against the real pipeline on real Postgres and
// RabbitMQ and has the checker judge what actually happened; the engine
// that does so lives behind the internal boundary (scenarios/internal/run).
//
// To add a scenario: add one entry to Catalogue.
package scenarios

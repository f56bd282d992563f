// Package catalogue is the named failure cases as data: every row of the
// failure table (see docs/design.md) and the other loss windows the design
// names (Named, Lookup), the infrastructure scenarios (Infra), and the
// peer cases run against relays we did not write (PeerCases,
// PeerCaseApplies, ForPeer). Each is a value of the scenario language
// (package scenario: a workload, a list of steps, its row's expectations
// as checker rules) written with the words of words.go; it prints and
// saves as JSON and replays from it. Nothing here runs a scenario:
// package scenarios does.
//
// To add a scenario: add one entry to its file's list (catalogue.go for
// the failure table's rows, reconcile.go, defects.go, audit.go, infra.go,
// peers.go).
package catalogue

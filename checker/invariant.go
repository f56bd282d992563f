package checker

import (
	"github.com/outboxchaos/outboxchaos/history"
)

// Invariant is one clause of the contract, checked on its own: a pure
// function of a run's history, faults and final state that lists every
// violation it finds (none: the clause holds). Invariants are composed as
// Jepsen's checker/compose composes checkers: each runs on the same run,
// the verdict lists each one's result by name, and the run keeps the
// contract when every one is valid.
type Invariant struct {
	// Name is the invariant's name in a verdict ("nothing-twice").
	Name string
	// Doc says what holds, in one line.
	Doc string
	// Check lists the violations, each a self-explaining detail.
	Check func(in Input) []string
	// Counter, if set, is the Verdict count its violations add to: the
	// counts recorded runs were judged by. An invariant added later needs
	// none; its result is enough.
	Counter func(v *Verdict) *int
	// Needs, if set, says why a run cannot be judged by this invariant
	// ("" when it can): a run recorded without the harness record the
	// auditor invariants read. Such a run is judged by the others; the
	// result says why not by this one.
	Needs func(s State) string
}

// needsHarness: the auditor invariants judge only runs that carry the
// harness's own record.
func needsHarness(s State) string {
	if s.Harness == nil {
		return "no harness record: judged by the other invariants only"
	}
	return ""
}

// Input is what an invariant reads: one run's history, faults and final
// state, and the tally of its intents (computed once for all invariants).
type Input struct {
	History []history.Event
	Faults  []FaultRecord
	State   State
	Tally   Tally
}

// Result is one invariant's result in a verdict; its violations' details
// are in Verdict.Details.
type Result struct {
	Name       string `json:"name"`
	Valid      bool   `json:"valid"`
	Violations int    `json:"violations,omitempty"`
	// NotJudged says why the invariant could not judge the run (it is
	// then valid, by default, and says so).
	NotJudged string `json:"not_judged,omitempty"`
}

// Invariants is the registry: every invariant the contract holds a run
// to, in the order a verdict lists them. Adding one is a file that
// defines it and a line here.
var Invariants = []Invariant{
	nothingUnexpected,
	nothingTwice,
	nothingLostSilently,
	nothingStuck,
	settled,
	settlementsAgree,
	alertContract,
	backoff,
	republishBound,
	claimOrder,
	rightIntents,
	rightTime,
	rightPerson,
	trueAlerts,
	statusesAgree,
}

// invariant returns the registered invariant called name.
func invariant(name string) (Invariant, bool) {
	for _, inv := range Invariants {
		if inv.Name == name {
			return inv, true
		}
	}
	return Invariant{}, false
}

package checker

// nothingStuck: no intent is left in flight at the end: an outbox row
// PENDING (not deferred) or PUBLISHING, an inbox row SENDING or RESENDING,
// a message still queued.
var nothingStuck = Invariant{
	Name:    "nothing-stuck",
	Doc:     "no intent left in flight at the end of the run",
	Check:   func(in Input) []string { return in.Tally.With(FateStuck) },
	Counter: func(v *Verdict) *int { return &v.Stuck },
}

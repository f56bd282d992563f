package checker

// nothingLostSilently: every intent that never reached a handset is
// either skipped on purpose (as the business tables, not the pipeline,
// say), deferred, or named by an alert.
var nothingLostSilently = Invariant{
	Name:    "nothing-lost-silently",
	Doc:     "every intent not delivered was skipped rightly, deferred, or told by an alert",
	Check:   func(in Input) []string { return in.Tally.With(FateLostSilently) },
	Counter: func(v *Verdict) *int { return &v.LostSilently },
}

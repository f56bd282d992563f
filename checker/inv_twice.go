package checker

// nothingTwice: no intent reached a handset more than once (by its
// message_id or, under another message_id format, by its dedup key).
var nothingTwice = Invariant{
	Name:    "nothing-twice",
	Doc:     "no intent reached a handset more than once",
	Check:   func(in Input) []string { return in.Tally.With(FateDuplicated) },
	Counter: func(v *Verdict) *int { return &v.Duplicated },
}

package checker

// settled: the run reached quiescence (Quiescent) before its deadline. A
// run that did not is counted stuck, as recorded runs were.
var settled = Invariant{
	Name: "settled",
	Doc:  "the run reached quiescence before its deadline",
	Check: func(in Input) []string {
		if in.State.Settled {
			return nil
		}
		return []string{"stuck: the run did not reach quiescence before its deadline"}
	},
	Counter: func(v *Verdict) *int { return &v.Stuck },
}

package checker

import (
	"fmt"
	"slices"
	"time"

	"github.com/outboxchaos/outboxchaos/auditor"
	"github.com/outboxchaos/outboxchaos/history"
)

// rightTime: an advertising message reaches a phone only inside the
// advertising hours (by the vendor's receive time on the run's clock),
// and a relay publishes one only when it decided inside the publishing
// hours (before the cut-off, not before the resume time). A pod whose
// own clock the harness moved is not judged on the run's clock.
var rightTime = Invariant{
	Name:  "right-time",
	Doc:   "advertising messages reach phones only inside the advertising hours and are published only before the relay cut-off",
	Needs: needsHarness,
	Check: func(in Input) []string {
		h := in.State.Harness
		var out []string
		for e, row := range in.Tally.Owned(in.State.Ledger) {
			if !auditor.Advertising(row.Kind) || e.At.IsZero() || sentBySkewed(in.History, h, e.RefKey) {
				continue
			}
			if !h.Hours.MaySend(e.At) {
				out = append(out, fmt.Sprintf("wrong time: advertising %s reached a phone at %s, outside %s-%s",
					e.RefKey, e.At.In(auditor.Seoul).Format(time.TimeOnly), auditor.Clock(h.Hours.SendFrom), auditor.Clock(h.Hours.SendUntil)))
			}
		}
		decided := map[string]map[int64]time.Time{} // pod -> outbox id -> its last claim's decision time
		for _, ev := range in.History {
			switch ev.Name {
			case history.Claim:
				now, err := time.Parse(time.RFC3339Nano, ev.Str(history.KeyNow))
				if err != nil || h.IsSkewed(ev.Pod) {
					continue
				}
				if decided[ev.Pod] == nil {
					decided[ev.Pod] = map[int64]time.Time{}
				}
				for _, id := range ev.IDs(history.KeyIDs) {
					decided[ev.Pod][id] = now
				}
			case history.Publish:
				id, ok := ev.Int(history.KeyOutboxID)
				if !ok {
					continue
				}
				at, ok := decided[ev.Pod][id]
				row, known := in.Tally.ByMID[MessageID(id)]
				if ok && known && auditor.Advertising(row.Kind) && !h.Hours.MayPublish(at) {
					out = append(out, fmt.Sprintf("wrong time: %s published advertising %s decided at %s, outside %s-%s",
						ev.Pod, MessageID(id), at.In(auditor.Seoul).Format(time.TimeOnly), auditor.Clock(h.Hours.Resume), auditor.Clock(h.Hours.PublishCutoff)))
				}
			}
		}
		return out
	},
}

// sentBySkewed reports whether a pod whose clock the harness moved called
// the vendor with message mid.
func sentBySkewed(h []history.Event, r *auditor.Record, mid string) bool {
	return slices.ContainsFunc(h, func(ev history.Event) bool {
		return ev.Name == history.VendorCall && ev.Str(history.KeyMessageID) == mid && r.IsSkewed(ev.Pod)
	})
}

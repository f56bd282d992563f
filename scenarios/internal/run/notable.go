package run

import (
	"regexp"
	"slices"
	"strings"

	"github.com/outboxchaos/outboxchaos/history"
)

// notableEvents are the pipeline's state changes a short timeline shows
// (not every delivery and ack).
var notableEvents = []string{
	history.Job, history.AnniversaryLost,
	history.Claim, history.Reclaim, history.Publish, history.PublishFailed, history.Mark, history.LostLease,
	history.OutboxFinal, history.AdDeferred,
	history.Park, history.ClaimLost, history.VendorCall, history.Result, history.ResultFailed, history.ResultLate,
	history.RetryFailed, history.ParkFailed, history.Reconnect, history.GaveUp,
	history.SendingTimeout, history.Alert, history.AlertFailed, history.Start,
}

// notableWords mark the lines worth showing that are no pod's event: the
// harness's and the operator's, faults, kill-points, pods starting and
// exiting.
var notableWords = []string{"harness", "operator", "KILLPOINT", "FAILPOINT", "fault", "toxic", "lost", "exited", "started"}

// eventTag finds the "[name]" a timeline line of a pod's event carries
// after its message (see faults' timeline summary).
var eventTag = regexp.MustCompile(`\s\[([a-z][a-z0-9-]*)\](\s|$)`)

// Notable reports whether a timeline line is worth printing in the short
// timeline. A pod's event is judged by its name (and an ack by its step:
// a copy skipped at the peek is shown), never by its message; any other
// line by the words that mark harness and operator lines, faults,
// kill-points, pods starting and exiting.
func Notable(line string) bool {
	if m := eventTag.FindStringSubmatch(line); m != nil {
		name := m[1]
		return slices.Contains(notableEvents, name) ||
			(name == history.Ack && strings.Contains(line, " "+history.KeyStep+"="+history.StepPeek))
	}
	for _, k := range notableWords {
		if strings.Contains(line, k) {
			return true
		}
	}
	return false
}

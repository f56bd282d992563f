package checker

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/outboxchaos/outboxchaos/history"
)

// FaultRecord is one injected fault and whether it fired, as the fault
// engine recorded it.
type FaultRecord struct {
	Kind   string        `json:"kind"`
	Target string        `json:"target"`
	At     time.Duration `json:"at"`              // when it was recovered (or the run ended)
	Start  time.Duration `json:"start,omitempty"` // when it was injected
	Fired  bool          `json:"fired"`
	Detail string        `json:"detail,omitempty"`
	// Phases are the pipeline phases it acts at, known from what it is (a
	// point's phase, a vendor mode's); none: those logged while it was in
	// place. Windowed: it held for a while (a link or node fault).
	Phases   []string `json:"phases,omitempty"`
	Windowed bool     `json:"windowed,omitempty"`
	// Components are what it acts on, as it says (faults.Reach): pod
	// roles, links, nodes, tables, the vendor, the main queue. None: it
	// does not know, and may act on anything.
	Components []string `json:"components,omitempty"`
}

// Record is one recorded run: everything the checker reads. A failing run
// writes its Record as run.json; copying that file into testdata/runs/
// makes it a regression fixture.
type Record struct {
	Scenario string `json:"scenario"`
	Row      string `json:"row,omitempty"`
	Seed     int64  `json:"seed"`
	// Bug is the canary armed in every pod, if any.
	Bug string `json:"bug,omitempty"`
	// Impl is the relay under test when it is not ours (a peer of the
	// registry, or a relay given as a command line).
	Impl string `json:"impl,omitempty"`
	// ScenarioSpec is the scenario that ran, as its JSON, for replay.
	ScenarioSpec json.RawMessage `json:"scenario_spec,omitempty"`
	// Expect are the scenario's row-specific rules, beyond the contract.
	Expect []Rule `json:"expect,omitempty"`
	// AllowUnfired accepts faults that never fired (random schedules).
	AllowUnfired bool            `json:"allow_unfired,omitempty"`
	History      []history.Event `json:"history"`
	Faults       []FaultRecord   `json:"faults"`
	State        State           `json:"state"`
	// HarnessError is why the run could not be driven to its end (a
	// condition that never came, a pod that would not start), if it could not.
	HarnessError string `json:"harness_error,omitempty"`
	// Verdict and Failure are what the checker said when the run was recorded.
	Verdict Verdict `json:"verdict"`
	Failure string  `json:"failure,omitempty"`
	// NotJudged is why the run was not judged (ERROR: the harness or its
	// infrastructure failed, or a signal ended it), if it was not. Its
	// counts then judge nothing: checking the record again answers ERROR
	// too, never FAIL.
	NotJudged string `json:"not_judged,omitempty"`
}

// Events returns the history's events called name, in time order.
func (r Record) Events(name string) []history.Event {
	var out []history.Event
	for _, e := range r.History {
		if name == "" || e.Name == name {
			out = append(out, e)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At < out[j].At })
	return out
}

// Count counts the events called name logged by pods whose name is pod or,
// when pod ends in "-", starts with it; whose attributes match attrs.
func Count(h []history.Event, name, pod string, attrs map[string]string) int {
	n := 0
	for _, e := range h {
		if e.Name == name && podMatches(e.Pod, pod) && attrsMatch(e, attrs) {
			n++
		}
	}
	return n
}

func podMatches(got, want string) bool {
	if want == "" {
		return true
	}
	if strings.HasSuffix(want, "-") {
		return strings.HasPrefix(got, want)
	}
	return got == want
}

func attrsMatch(e history.Event, attrs map[string]string) bool {
	for k, v := range attrs {
		if e.Str(k) != v {
			return false
		}
	}
	return true
}

// Copies counts the message_ids delivered to a worker more than once: the
// copies a fault made that the inbox had to absorb.
func Copies(h []history.Event) int {
	per := map[string]int{}
	for _, e := range h {
		if e.Name == history.Delivery {
			per[e.Str(history.KeyMessageID)]++
		}
	}
	n := 0
	for _, c := range per {
		if c > 1 {
			n++
		}
	}
	return n
}

// PeekSkips counts redeliveries the worker acked at the peek because the
// message's inbox row already existed.
func PeekSkips(h []history.Event) int {
	return Count(h, history.Ack, "", map[string]string{history.KeyStep: history.StepPeek})
}

// FaultsFired fails a run whose faults never happened, unless allowed.
func FaultsFired(faults []FaultRecord, allowUnfired bool) error {
	if allowUnfired {
		return nil
	}
	if len(faults) == 0 {
		return fmt.Errorf("no fault was recorded: the scenario did not inject anything")
	}
	for _, f := range faults {
		if !f.Fired {
			return fmt.Errorf("fault %s on %s (%s) never fired", f.Kind, f.Target, f.Detail)
		}
	}
	return nil
}

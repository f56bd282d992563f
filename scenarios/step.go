package scenarios

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/outboxchaos/outboxchaos/faults"
	"github.com/outboxchaos/outboxchaos/system/notification"
)

// Step is one step of a scenario, as data. Do says what it does:
//
//	enqueue   run the batch job to completion (per_kind, kinds; faults armed in it)
//	start     start one pod per role in roles (faults armed in the first; env, link, supervise)
//	await     wait until cond holds (timeout, default 30 s)
//	assert    cond must hold now
//	inject    put faults in place until the end of the run
//	during    put faults in place, run steps, wait for cond (or for "for"), then recover them;
//	          "after" delays the start (random schedules)
//	parallel  run steps concurrently and wait for all
//	restart   start pod again without its kill-point or failpoints (new_name: as role-N+1)
//	replace   wait until pod died at its crash point (or exited, or the run is quiescent);
//	          a killed pod is replaced by a new pod of its role under a new name
//	stop      stop pod (SIGTERM, then SIGKILL)
type Step struct {
	Do        string              `json:"do"`
	Note      string              `json:"note,omitempty"` // why the step is there
	Roles     []string            `json:"roles,omitempty"`
	PerKind   int                 `json:"per_kind,omitempty"`
	Kinds     []notification.Kind `json:"kinds,omitempty"`
	Faults    []faults.Spec       `json:"faults,omitempty"`
	Env       []string            `json:"env,omitempty"`
	Link      string              `json:"link,omitempty"`
	Supervise bool                `json:"supervise,omitempty"`
	Pod       string              `json:"pod,omitempty"`
	// NewName: restart starts a new pod of the role under a new name
	// (role-N+1), as a deployment's restarted pod gets a new instance name.
	NewName bool            `json:"new_name,omitempty"`
	Cond    *Cond           `json:"cond,omitempty"`
	Steps   []Step          `json:"steps,omitempty"`
	After   faults.Duration `json:"after,omitempty"`
	For     faults.Duration `json:"for,omitempty"`
	Timeout faults.Duration `json:"timeout,omitempty"`
	// Optional: a fault that cannot be put in place (its link is already
	// down) is skipped, not a failure (random schedules).
	Optional bool `json:"optional,omitempty"`
}

// roles a start step may name.
var roles = []string{"relay", "worker", "cleanup", "reconciler", "job", "migrate"}

// verbs are the step verbs, in the order docs/harness.md lists them.
var verbs = []string{"enqueue", "start", "await", "assert", "inject", "during", "parallel", "restart", "replace", "stop"}

// validate checks what the step's verb requires.
func (s Step) validate() error {
	var err error
	switch s.Do {
	case "enqueue":
		err = podFaultsOnly(s.Faults)
	case "start":
		err = s.validateStart()
	case "await", "assert":
		err = needCond(s)
	case "inject":
		err = liveFaults(s.Faults)
	case "during":
		err = s.validateDuring()
	case "parallel":
		err = validSteps(s.Steps)
	case "restart", "stop", "replace":
		err = needPod(s)
	default:
		return fmt.Errorf("unknown step %q (steps: %s)", s.Do, strings.Join(verbs, ", "))
	}
	if err != nil {
		return err
	}
	for _, k := range s.Kinds {
		if !slices.Contains(notification.Kinds, k) {
			return fmt.Errorf("unknown kind %q", k)
		}
	}
	return nil
}

func (s Step) validateStart() error {
	if len(s.Roles) == 0 {
		return errors.New("needs roles")
	}
	for _, r := range s.Roles {
		if !slices.Contains(roles, r) {
			return fmt.Errorf("unknown role %q (roles: %s)", r, strings.Join(roles, ", "))
		}
	}
	if s.Link != "" && !slices.Contains(faults.LinkNames, s.Link) {
		return fmt.Errorf("unknown link %q", s.Link)
	}
	return podFaultsOnly(s.Faults)
}

func (s Step) validateDuring() error {
	if (s.Cond == nil) == (s.For == 0) {
		return errors.New("needs exactly one of cond and for")
	}
	if s.Cond != nil {
		if err := s.Cond.validate(); err != nil {
			return err
		}
	}
	return errors.Join(liveFaults(s.Faults), validSteps(s.Steps))
}

func needCond(s Step) error {
	if s.Cond == nil {
		return errors.New("needs cond")
	}
	return s.Cond.validate()
}

func needPod(s Step) error {
	if s.Pod == "" {
		return errors.New("needs pod")
	}
	return nil
}

func validSteps(steps []Step) error {
	var errs []error
	for i, st := range steps {
		if err := st.validate(); err != nil {
			errs = append(errs, fmt.Errorf("inner step %d (%s): %w", i+1, st.Do, err))
		}
	}
	return errors.Join(errs...)
}

// podFaultsOnly: faults armed in a pod must be pod faults.
func podFaultsOnly(specs []faults.Spec) error { return faultsWhere(specs, true) }

// liveFaults: a step that injects faults needs some, and none is a pod fault.
func liveFaults(specs []faults.Spec) error {
	if len(specs) == 0 {
		return errors.New("needs faults")
	}
	return faultsWhere(specs, false)
}

// faultsWhere builds each spec and checks it is a pod fault exactly when
// inPod.
func faultsWhere(specs []faults.Spec, inPod bool) error {
	for _, sp := range specs {
		f, err := sp.Build()
		if err != nil {
			return err
		}
		if _, isPod := f.(faults.PodFault); isPod != inPod {
			if inPod {
				return fmt.Errorf("%s is not armed in a pod: use an inject or during step", f)
			}
			return fmt.Errorf("%s is armed in a pod: put it in a start or enqueue step", f)
		}
	}
	return nil
}

// String describes the step in one line, for the timeline.
func (s Step) String() string {
	var b strings.Builder
	b.WriteString(s.Do)
	if len(s.Roles) > 0 {
		b.WriteString(" " + strings.Join(s.Roles, ","))
	}
	if s.Pod != "" {
		b.WriteString(" " + s.Pod)
	}
	if s.PerKind > 0 {
		fmt.Fprintf(&b, " per-kind=%d", s.PerKind)
	}
	for _, f := range s.Faults {
		if ff, err := f.Build(); err == nil {
			b.WriteString(" [" + ff.String() + "]")
		}
	}
	if s.Cond != nil {
		b.WriteString(" until " + s.Cond.String())
	}
	if s.For > 0 {
		fmt.Fprintf(&b, " for %s", s.For)
	}
	return b.String()
}

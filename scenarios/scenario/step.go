package scenario

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/outboxchaos/outboxchaos/faults"
	"github.com/outboxchaos/outboxchaos/system/notification"
)

// Step is one step of a scenario, as data. Do names its verb, one of the
// registry verbs, which says what the verb does and needs.
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
	// WhileFrozen: an enqueue step's faults put in place once its job pod
	// froze at the pause-point armed in it, the pod then continued, and
	// the faults recovered once it exited (a link cut in the middle of
	// the job's transaction); a pod that exits without freezing gets none.
	WhileFrozen []faults.Spec `json:"while_frozen,omitempty"`
	// Optional: a fault that cannot be put in place (its link is already
	// down) is skipped, not a failure (random schedules).
	Optional bool `json:"optional,omitempty"`
	// Overhang: a thaw step's faults stay in place this long after the
	// pod resumed, so what it does first meets them too.
	Overhang faults.Duration `json:"overhang,omitempty"`
}

// roles a start step may name.
var roles = []string{"relay", "worker", "cleanup", "reconciler", "job", "migrate"}

// verb is one step verb: what it does (docs/harness.md says the same at
// length) and what it needs of its step.
type verb struct {
	doc      string
	validate func(s Step) error
}

// verbs is the registry of step verbs. A new verb is a line here and one
// in the runner's (how it is carried out). It is filled in init: verbs
// that hold steps (during, parallel) validate them through it.
var verbs map[string]verb

func init() {
	verbs = map[string]verb{
		"enqueue":  {"run the batch job to completion (per_kind, kinds; faults armed in it; while_frozen: faults while it is frozen at its pause-point)", validateEnqueue},
		"start":    {"start one pod per role in roles (faults armed in the first; env, link, supervise)", Step.validateStart},
		"await":    {"wait until cond holds (timeout, default 30 s)", needCond},
		"assert":   {"cond must hold now", needCond},
		"inject":   {"put faults in place until the end of the run (or a recover step)", validateInject},
		"recover":  {"take away faults an inject step put in place, named as they were injected", validateRecover},
		"during":   {"put faults in place, run steps, wait for cond (or for \"for\", after \"after\"), then recover them; without faults, run steps and wait for cond, its fresh events counted from before them", Step.validateDuring},
		"parallel": {"run steps concurrently and wait for all", validateParallel},
		"later":    {"wait \"after\", then run steps in order (sustained load's job runs inside a parallel step)", validateLater},
		"restart":  {"start pod again without its kill-point or failpoints (new_name: as role-N+1)", needPod},
		"replace":  {"wait until pod died at its crash point (or exited, or the run is quiescent); replace a dead pod by a new one of its role", needPod},
		"stop":     {"stop pod (SIGTERM, then SIGKILL)", needPod},
		"thaw":     {"wait until pod froze at its pause-point (or exited, or the run is quiescent), keep it frozen for \"for\" (with its faults in place meanwhile, and \"overhang\" after), then resume it", validateThaw},
	}
}

// VerbNames lists the step verbs, sorted.
func VerbNames() []string {
	var out []string
	for v := range verbs {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}

// validate checks what the step's verb requires.
func (s Step) validate() error {
	v, ok := verbs[s.Do]
	if !ok {
		return fmt.Errorf("unknown step %q (steps: %s)", s.Do, strings.Join(VerbNames(), ", "))
	}
	if err := v.validate(s); err != nil {
		return err
	}
	for _, k := range s.Kinds {
		if !slices.Contains(notification.Kinds, k) {
			return fmt.Errorf("unknown kind %q", k)
		}
	}
	return nil
}

func validateEnqueue(s Step) error {
	if len(s.WhileFrozen) == 0 {
		return podFaultsOnly(s.Faults)
	}
	if !slices.ContainsFunc(s.Faults, func(f faults.Spec) bool { return f.Kind == faults.KindPausePoint }) {
		return errors.New("while_frozen needs a pause-point among its faults")
	}
	return errors.Join(podFaultsOnly(s.Faults), liveFaults(s.WhileFrozen))
}

func validateInject(s Step) error   { return liveFaults(s.Faults) }
func validateParallel(s Step) error { return validSteps(s.Steps) }

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
	if len(s.Faults) == 0 && len(s.Steps) > 0 && s.Cond != nil {
		// No faults: run the steps and wait for cond, its fresh events
		// counted from before the steps ran.
		return validSteps(s.Steps)
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
	for _, f := range s.WhileFrozen {
		if ff, err := f.Build(); err == nil {
			b.WriteString(" [" + ff.String() + " while frozen]")
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

// validateLater: later needs its wait and its steps.
func validateLater(s Step) error {
	if s.After <= 0 || len(s.Steps) == 0 {
		return errors.New("needs after and steps")
	}
	return validSteps(s.Steps)
}

// validateRecover: a recover step names faults as an inject step put them
// in place.
func validateRecover(s Step) error {
	if len(s.Faults) == 0 {
		return errors.New("needs faults: the injected faults to take away, as they were injected")
	}
	return liveFaults(s.Faults)
}

// validateThaw: thaw needs the pod and how long it stays frozen.
func validateThaw(s Step) error {
	if s.Pod == "" || s.For <= 0 {
		return errors.New("needs pod and for")
	}
	return nil
}

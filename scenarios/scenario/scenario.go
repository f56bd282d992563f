// Package scenario is the scenario language: a scenario as data — its
// workload, its steps (each a verb: start pods, enqueue, await a
// condition, hold faults in place until one, …), the conditions they wait
// for, and its row's expectations as checker rules — with what each verb
// and condition means and needs (the registries verbs and conditions),
// its validation, its one-line descriptions and its JSON. It runs
// nothing: package scenarios carries the steps out and probes the
// conditions, each by the name registered here.
//
// A new verb or condition is a line in its registry here (what it means
// and needs) and a line in the runner's (how it is carried out).
package scenario

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/outboxchaos/outboxchaos/checker"
	"github.com/outboxchaos/outboxchaos/faults"
	"github.com/outboxchaos/outboxchaos/system/clock"
	"github.com/outboxchaos/outboxchaos/system/config"
	"github.com/outboxchaos/outboxchaos/system/notification"
)

// Scenario is one failure case, as data.
type Scenario struct {
	Name        string `json:"name"`
	Row         string `json:"row"` // the failure table's row ("4") or "extra"
	Description string `json:"description"`
	Fault       string `json:"fault"`   // what is injected, in words
	Outcome     string `json:"outcome"` // what must happen, in words
	// PerKind notifications of each of Kinds (default 1 of every kind).
	PerKind int                 `json:"per_kind,omitempty"`
	Kinds   []notification.Kind `json:"kinds,omitempty"`
	// Start is the Seoul time the virtual clock starts: "hh:mm:ss" today,
	// or "YYYY-MM-DD hh:mm:ss" (default 10:00:00 today).
	Start string `json:"start,omitempty"`
	// Config sets OUTBOXCHAOS_* settings over the compressed configuration.
	Config map[string]string `json:"config,omitempty"`
	// SelfMigrate: the steps migrate the schema themselves; otherwise the
	// runner migrates before the first step.
	SelfMigrate bool   `json:"self_migrate,omitempty"`
	Steps       []Step `json:"steps"`
	// Expect are the row's rules beyond the contract (nothing twice,
	// nothing lost silently, nothing stuck), judged by the checker.
	Expect []checker.Rule `json:"expect,omitempty"`
	// AllowUnfired accepts faults that never fired (random schedules).
	AllowUnfired bool `json:"allow_unfired,omitempty"`
	// Infra says the run needs containers of its own, which its
	// infrastructure faults crash: "single" (Postgres and one RabbitMQ)
	// or "cluster" (Postgres and three RabbitMQ nodes). Empty: the shared
	// services.
	Infra string `json:"infra,omitempty"`
	// Settle bounds the wait for quiescence after the last step (default
	// DefaultSettle). A relay whose recovery runs on a fixed timer needs
	// longer: River rescues a job a killed relay left running only at its
	// rescuer's next 30 s tick.
	Settle faults.Duration `json:"settle,omitempty"`
	// Business shapes the business rows the harness seeds beyond one row
	// per member and table (nil: none beyond).
	Business *BusinessShape `json:"business,omitempty"`
}

// DefaultSettle is Scenario.Settle when unset.
const DefaultSettle = 30 * time.Second

// SettleWithin is the run's quiescence bound.
func (s *Scenario) SettleWithin() time.Duration {
	if s.Settle > 0 {
		return time.Duration(s.Settle)
	}
	return DefaultSettle
}

// InfraLayouts are the values of Scenario.Infra.
var InfraLayouts = []string{"single", "cluster"}

// Members is how many members of each kind the job enqueues: PerKind, at
// least one.
func (s *Scenario) Members() int { return max(s.PerKind, 1) }

// StartTime places the virtual clock: at Start's time of day on the Seoul
// day of now, or on Start's own date when it names one.
func (s *Scenario) StartTime(now time.Time) (time.Time, error) {
	if s.Start == "" {
		return clock.At(now, 10, 0), nil
	}
	tod := s.Start
	if date, rest, ok := strings.Cut(s.Start, " "); ok {
		d, err := time.ParseInLocation(time.DateOnly, date, clock.Seoul)
		if err != nil {
			return time.Time{}, fmt.Errorf("start %q: want hh:mm:ss or YYYY-MM-DD hh:mm:ss", s.Start)
		}
		now, tod = d, rest
	}
	var h, m, sec int
	if _, err := fmt.Sscanf(tod, "%d:%d:%d", &h, &m, &sec); err != nil || h > 23 || m > 59 || sec > 59 {
		return time.Time{}, fmt.Errorf("start %q: want hh:mm:ss or YYYY-MM-DD hh:mm:ss", s.Start)
	}
	return clock.At(now, h, m).Add(time.Duration(sec) * time.Second), nil
}

// Validate reports what is wrong with the scenario before anything runs:
// unknown step verbs, fault kinds, conditions, rules or kinds.
func (s *Scenario) Validate() error {
	var errs []error
	if s.Name == "" {
		errs = append(errs, errors.New("no name"))
	}
	if _, err := s.StartTime(time.Now()); err != nil {
		errs = append(errs, err)
	}
	c := config.Default()
	if err := ApplyConfig(&c, s.Config); err != nil {
		errs = append(errs, err)
	}
	for _, k := range s.Kinds {
		if !slices.Contains(notification.Kinds, k) {
			errs = append(errs, fmt.Errorf("unknown kind %q", k))
		}
	}
	if s.Settle < 0 {
		errs = append(errs, fmt.Errorf("settle %s is negative", time.Duration(s.Settle)))
	}
	if s.Infra != "" && !slices.Contains(InfraLayouts, s.Infra) {
		errs = append(errs, fmt.Errorf("unknown infra %q (known: %s)", s.Infra, strings.Join(InfraLayouts, ", ")))
	}
	for i, st := range s.Steps {
		if err := st.validate(); err != nil {
			errs = append(errs, fmt.Errorf("step %d (%s): %w", i+1, st.Do, err))
		}
	}
	for _, r := range s.Expect {
		errs = append(errs, r.Validate())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("scenario %s: %w", s.Name, err)
	}
	return nil
}

// JSON is the scenario as indented JSON.
func (s *Scenario) JSON() []byte {
	b, _ := json.MarshalIndent(s, "", "  ")
	return append(b, '\n')
}

// Parse reads a scenario from JSON: a scenario file, or a run.json a run
// wrote (its "scenario_spec"). Unknown fields are errors.
func Parse(b []byte) (*Scenario, *checker.Record, error) {
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(b, &probe); err != nil {
		return nil, nil, fmt.Errorf("parse scenario JSON: %w", err)
	}
	var rec *checker.Record
	if spec, ok := probe["scenario_spec"]; ok {
		rec = &checker.Record{}
		if err := json.Unmarshal(b, rec); err != nil {
			return nil, nil, fmt.Errorf("parse run record: %w", err)
		}
		b = spec
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	var s Scenario
	if err := dec.Decode(&s); err != nil {
		return nil, nil, fmt.Errorf("parse scenario: %w", err)
	}
	if err := s.Validate(); err != nil {
		return nil, nil, err
	}
	return &s, rec, nil
}

// ApplyConfig sets the scenario's settings, named as the flags are
// ("batch-size": "5"), over c; an unknown name is an error.
func ApplyConfig(c *config.Config, settings map[string]string) error {
	byEnv := map[string]string{}
	for k := range settings {
		byEnv[config.EnvName(k)] = k
	}
	used := map[string]bool{}
	err := c.FromLookup(func(env string) (string, bool) {
		k, ok := byEnv[env]
		used[k] = ok
		return settings[k], ok
	})
	if err != nil {
		return fmt.Errorf("scenario configuration: %w", err)
	}
	for k := range settings {
		if !used[k] {
			return fmt.Errorf("scenario configuration: unknown setting %q (see outboxchaos relay --help for the names)", k)
		}
	}
	return nil
}

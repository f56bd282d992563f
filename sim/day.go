// Package sim drives the real pipeline — the batch jobs on their
// schedules, the relay and cleanup as the 5-minute cron jobs they are, a
// worker deployment, optionally the reconciler — through a whole business
// day on a shared virtual clock, compressed into minutes of wall time, and
// measures what operators ask: how many ERROR rows and alerts a bad day
// brings, how late messages reach the phone, how many members the
// single-active-consumer worker can notify before the 20:50 advertising
// cut-off.
//
// A day is data (Day): the workload, the vendor's latency distribution and
// fault rates, pod kills, link blips and deploys. Everything random is drawn
// from the seed (plan.go), so the same seed gives the same workload and
// fault plan. The virtual clock runs at the day's rate while anything is in
// flight and jumps over idle stretches (run.go); the simulator measures how
// much the compression itself added to every message and refuses to call a
// day valid when that distorts the answer (lag.go).
package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/outboxchaos/outboxchaos/system/clock"
	"github.com/outboxchaos/outboxchaos/system/notification"
)

// Day describes one simulated business day. Times of day are "HH:MM"
// Asia/Seoul; durations and latencies are virtual (production) time.
type Day struct {
	Name string `json:"name" yaml:"name"`
	// Date is the business day, YYYY-MM-DD.
	Date string `json:"date" yaml:"date"`
	// Rate is virtual seconds per real second while work is in flight.
	Rate float64 `json:"rate" yaml:"rate"`
	// Members is the number of members; Consent the share with SMS consent.
	Members int     `json:"members" yaml:"members"`
	Consent float64 `json:"consent" yaml:"consent"`
	// Jobs are the batch jobs: which kind, when, for how many members.
	Jobs []Job `json:"jobs" yaml:"jobs"`
	// Vendor is the SMS vendor's behaviour.
	Vendor Vendor `json:"vendor" yaml:"vendor"`
	// Relay: the cron job's batch size and whether it drains a backlog.
	BatchSize  int  `json:"batch_size" yaml:"batch_size"`
	RelayDrain bool `json:"relay_drain" yaml:"relay_drain"`
	// Workers is the worker deployment's replica count (one consumes at a
	// time: single active consumer, prefetch 1).
	Workers int `json:"workers" yaml:"workers"`
	// Reconcile runs the reconciler (settling only) beside the pipeline.
	Reconcile bool `json:"reconcile" yaml:"reconcile"`
	// Faults per day, at instants drawn from the seed inside the relay
	// window.
	Faults Faults `json:"faults" yaml:"faults"`
	// Deploys are rolling restarts of the worker deployment, "HH:MM".
	Deploys []string `json:"deploys" yaml:"deploys"`
}

// Job is one batch job run.
type Job struct {
	Kind    string `json:"kind" yaml:"kind"`
	At      string `json:"at" yaml:"at"`
	Members int    `json:"members" yaml:"members"` // 0: every member
}

// Vendor is the vendor's latency distribution (log-normal, in virtual
// milliseconds) and the share of sends that meet each fault.
type Vendor struct {
	LatencyMedianMS float64 `json:"latency_median_ms" yaml:"latency_median_ms"`
	LatencyP99MS    float64 `json:"latency_p99_ms" yaml:"latency_p99_ms"`
	// Timeout: the call times out; half of these reached the phone first.
	Timeout float64 `json:"timeout" yaml:"timeout"`
	// Fail5xx: the vendor answers 5xx; half of these reached the phone.
	Fail5xx float64 `json:"5xx" yaml:"5xx"`
	// Throttle: the vendor answers 429 (definitely not sent, retried).
	Throttle float64 `json:"429" yaml:"429"`
}

// Faults are infrastructure faults per day.
type Faults struct {
	WorkerKills int `json:"worker_kills" yaml:"worker_kills"` // SIGKILL of the active worker
	RelayKills  int `json:"relay_kills" yaml:"relay_kills"`   // a relay run dies at a kill-point
	BrokerBlips int `json:"broker_blips" yaml:"broker_blips"` // every RabbitMQ link down
	DBBlips     int `json:"db_blips" yaml:"db_blips"`         // the Postgres link down
	// BlipSeconds is how long a blip lasts (virtual seconds).
	BlipSeconds float64 `json:"blip_seconds" yaml:"blip_seconds"`
}

// Default is the day `outboxchaos simulate` runs without --config: a
// weekday of 3,000 members with every job, a vendor at 150 ms median with
// 0.5 % timeouts, two worker kills, a broker blip and a deploy.
func Default() Day {
	return Day{
		Name: "weekday", Date: "2026-03-10", Rate: 5, Members: 3000, Consent: 0.97,
		Jobs: []Job{
			{Kind: string(notification.GradeRenewal), At: "09:00"},
			{Kind: string(notification.MonthlyAwardsWinning), At: "10:00", Members: 400},
			{Kind: string(notification.MonthlyAwardsClosing), At: "10:00", Members: 400},
			{Kind: string(notification.AnniversaryCoupon), At: "11:30", Members: 150},
			{Kind: string(notification.MissionReminder), At: "18:00", Members: 1000},
			{Kind: string(notification.GradeLockIn), At: "19:00", Members: 500},
		},
		Vendor:    Vendor{LatencyMedianMS: 150, LatencyP99MS: 900, Timeout: 0.005, Fail5xx: 0.002, Throttle: 0.01},
		BatchSize: 50, Workers: 2,
		Faults:  Faults{WorkerKills: 2, RelayKills: 1, BrokerBlips: 1, DBBlips: 1, BlipSeconds: 20},
		Deploys: []string{"14:00"},
	}
}

// Load reads a day from a JSON or YAML file (by extension); fields it does
// not set keep Default's values, unknown fields are errors.
func Load(path string) (Day, error) {
	d := Default()
	// Lists are replaced, not merged: decode them into empty ones, and
	// fall back to the defaults only where the file has none.
	d.Jobs, d.Deploys = nil, nil
	b, err := os.ReadFile(path)
	if err != nil {
		return d, fmt.Errorf("read day: %w", err)
	}
	switch strings.ToLower(filepath.Ext(path)) {
	case ".yaml", ".yml":
		dec := yaml.NewDecoder(bytes.NewReader(b))
		dec.KnownFields(true)
		err = dec.Decode(&d)
	default:
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		err = dec.Decode(&d)
	}
	if err != nil {
		return d, fmt.Errorf("day %s: %w", path, err)
	}
	if d.Jobs == nil {
		d.Jobs = Default().Jobs
	}
	if d.Deploys == nil {
		d.Deploys = Default().Deploys
	}
	if d.Name == "" || d.Name == Default().Name {
		d.Name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	return d, d.Validate()
}

// Validate reports every invalid field.
func (d Day) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if _, err := d.date(); err != nil {
		bad("date %q: want YYYY-MM-DD", d.Date)
	}
	if d.Rate < 1 || d.Rate > 1000 {
		bad("rate %g: want 1 to 1000 virtual seconds per real second", d.Rate)
	}
	if d.Members < 1 || d.Members > 200_000 {
		bad("members %d: want 1 to 200000", d.Members)
	}
	if d.Consent < 0 || d.Consent > 1 {
		bad("consent %g: want a share from 0 to 1", d.Consent)
	}
	if len(d.Jobs) == 0 {
		bad("jobs: a day needs at least one job")
	}
	for i, j := range d.Jobs {
		if !notification.Kind(j.Kind).Known() {
			bad("jobs[%d]: unknown kind %q (known: %s)", i, j.Kind, kindNames())
		}
		if _, err := parseHHMM(j.At); err != nil {
			bad("jobs[%d].at: %v", i, err)
		}
		if j.Members < 0 || j.Members > d.Members {
			bad("jobs[%d].members %d: want 0 (all) to members (%d)", i, j.Members, d.Members)
		}
	}
	v := d.Vendor
	if v.LatencyMedianMS < 0 || v.LatencyP99MS < v.LatencyMedianMS {
		bad("vendor latency: want 0 <= latency_median_ms <= latency_p99_ms, got %g and %g", v.LatencyMedianMS, v.LatencyP99MS)
	}
	for name, r := range map[string]float64{"timeout": v.Timeout, "5xx": v.Fail5xx, "429": v.Throttle} {
		if r < 0 || r > 1 {
			bad("vendor %s %g: want a share from 0 to 1", name, r)
		}
	}
	if v.Timeout+v.Fail5xx+v.Throttle > 1 {
		bad("vendor fault shares add up to more than 1")
	}
	if d.BatchSize < 1 || d.BatchSize > 512 {
		bad("batch_size %d: want 1 to 512", d.BatchSize)
	}
	if d.Workers < 1 || d.Workers > 8 {
		bad("workers %d: want 1 to 8", d.Workers)
	}
	f := d.Faults
	if f.WorkerKills < 0 || f.RelayKills < 0 || f.BrokerBlips < 0 || f.DBBlips < 0 || f.BlipSeconds < 0 {
		bad("faults: counts and blip_seconds must not be negative")
	}
	if (f.BrokerBlips > 0 || f.DBBlips > 0) && f.BlipSeconds <= 0 {
		bad("faults: blips need blip_seconds > 0")
	}
	for i, t := range d.Deploys {
		if _, err := parseHHMM(t); err != nil {
			bad("deploys[%d]: %v", i, err)
		}
	}
	return errors.Join(errs...)
}

func (d Day) date() (time.Time, error) {
	return time.ParseInLocation("2006-01-02", d.Date, clock.Seoul)
}

// at returns hh:mm on the day.
func (d Day) at(hhmm string) time.Time {
	day, _ := d.date()
	off, _ := parseHHMM(hhmm)
	return day.Add(off)
}

func parseHHMM(s string) (time.Duration, error) {
	t, err := time.Parse("15:04", s)
	if err != nil {
		return 0, fmt.Errorf("%q is not HH:MM", s)
	}
	return time.Duration(t.Hour())*time.Hour + time.Duration(t.Minute())*time.Minute, nil
}

func kindNames() string {
	var out []string
	for _, k := range notification.Kinds {
		out = append(out, string(k))
	}
	return strings.Join(out, ", ")
}

// Messages is how many notifications the day's jobs enqueue at most (before
// consent and dedup).
func (d Day) Messages() int {
	n := 0
	for _, j := range d.Jobs {
		n += d.jobMembers(j)
	}
	return n
}

func (d Day) jobMembers(j Job) int {
	if j.Members == 0 {
		return d.Members
	}
	return j.Members
}

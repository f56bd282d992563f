//go:build !pod

package main

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/outboxchaos/outboxchaos/checker"
	"github.com/outboxchaos/outboxchaos/scenarios"
	"github.com/outboxchaos/outboxchaos/system/preflight"
)

// jsonResult is one scenario's line of `scenario run --json`.
type jsonResult struct {
	Name      string          `json:"name"`
	Row       string          `json:"row"`
	Verdict   string          `json:"verdict"` // PASS, FAIL or ERROR
	Counts    checker.Verdict `json:"counts"`
	Seed      int64           `json:"seed"`
	Seconds   float64         `json:"seconds"`
	Error     string          `json:"error,omitempty"` // why it failed (a rule) or was not judged
	Details   []string        `json:"details,omitempty"`
	Artifacts string          `json:"artifacts,omitempty"`
	// Cost is what the run spent: wall time by phase and CPU by process
	// class, in nanoseconds, and the clock's jumps.
	Cost scenarios.Cost `json:"cost"`
}

func newJSONResult(r scenarios.Result) jsonResult {
	j := jsonResult{Name: r.Name, Row: r.Row, Verdict: r.Outcome().String(), Counts: r.Verdict, Seed: r.Seed,
		Seconds: r.Duration.Round(time.Millisecond).Seconds(), Artifacts: r.Artifacts, Details: r.Verdict.Details, Cost: r.Cost}
	j.Counts.Details = nil
	switch {
	case r.NotJudged != nil:
		j.Error = r.NotJudged.Error()
	case r.Err != nil:
		j.Error = r.Err.Error()
	}
	return j
}

// writeJSONResult writes r as one line of JSON (JSON Lines).
func writeJSONResult(w io.Writer, r scenarios.Result) error {
	b, err := json.Marshal(newJSONResult(r))
	if err != nil {
		return fmt.Errorf("encode result of %s: %w", r.Name, err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// ciOutput is where a harness command writes its machine-readable
// results: JSON lines (json nil: none) and a JUnit report (junit "":
// none).
type ciOutput struct {
	json  io.Writer
	junit string
}

// Names of the results that stand for a whole run, not one scenario or
// schedule: its preflight failed, or a signal ended it.
const (
	problemPreflight   = "preflight"
	problemInterrupted = "interrupted"
)

// runProblem is an ERROR no scenario or schedule stands for, named name
// and saying why: what a CI reader sees when the run judged nothing, or
// stopped before its end.
func runProblem(name string, why error) scenarios.Result {
	return scenarios.Result{Name: name, Row: "-", NotJudged: why}
}

// writeProblem writes p as a JSON line (if asked for) and, after the
// results judged before it, the JUnit report (if asked for).
func (c ciOutput) writeProblem(p scenarios.Result, results []scenarios.Result, wall time.Duration) error {
	var errs []error
	if c.json != nil {
		errs = append(errs, writeJSONResult(c.json, p))
	}
	if c.junit != "" {
		errs = append(errs, writeJUnit(c.junit, append(append([]scenarios.Result(nil), results...), p), wall))
	}
	return errors.Join(errs...)
}

// preflight checks, once before any run, that Postgres and RabbitMQ
// answer and accept the login: a run against a service that is down is
// not judged (exit 3), saying which service and why, on stderr and as an
// ERROR JSON line and JUnit test case where c asks for them.
func (c ciOutput) preflight(ctx context.Context, o scenarios.Options) error {
	perr := preflight.Services(ctx, o.PGURL, o.AMQPURL)
	if perr == nil {
		return nil
	}
	err := fmt.Errorf("%w: preflight: %w", errNotJudged, perr)
	why := fmt.Errorf("preflight: %w", perr)
	if sig, ok := interrupted(ctx); ok {
		why = fmt.Errorf("interrupted by %s: %w", sig, why)
	}
	if werr := c.writeProblem(runProblem(problemPreflight, why), nil, 0); werr != nil {
		return errors.Join(err, werr)
	}
	return err
}

// interruption is the ERROR of a run a signal ended, saying how many of
// its total items (what: "scenarios", "schedules") did not run; ok is
// false when no signal ended it.
func interruption(ctx context.Context, notRun, total int, what string) (scenarios.Result, bool) {
	sig, ok := interrupted(ctx)
	if !ok {
		return scenarios.Result{}, false
	}
	return runProblem(problemInterrupted, fmt.Errorf("interrupted by %s: %d of %d %s not run", sig, notRun, total, what)), true
}

// The JUnit XML schema CI systems read (Jenkins, GitHub, GitLab): a FAIL
// is a <failure>, an ERROR an <error>.
type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Time     string      `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitProblem `xml:"failure,omitempty"`
	Error     *junitProblem `xml:"error,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

// writeJUnit writes results as a JUnit XML report at path.
func writeJUnit(path string, results []scenarios.Result, wall time.Duration) error {
	suite := junitSuite{Name: "outboxchaos scenarios", Tests: len(results), Time: fmt.Sprintf("%.3f", wall.Seconds())}
	for _, r := range results {
		c := junitCase{Name: r.Name, Classname: "scenarios", Time: fmt.Sprintf("%.3f", r.Duration.Seconds())}
		line := verdictLine(r)
		switch r.Outcome() {
		case scenarios.OutcomeFail:
			suite.Failures++
			c.Failure = &junitProblem{Message: "contract violated: " + r.Verdict.String(), Text: line}
		case scenarios.OutcomeError:
			suite.Errors++
			c.Error = &junitProblem{Message: "not judged: " + r.NotJudged.Error(), Text: line}
		}
		if r.Outcome() != scenarios.OutcomePass {
			c.SystemOut = r.Timeline
			if r.Artifacts != "" {
				c.SystemOut = "artifacts: " + r.Artifacts + "\n" + c.SystemOut
			}
		}
		suite.Cases = append(suite.Cases, c)
	}
	b, err := xml.MarshalIndent(junitSuites{Suites: []junitSuite{suite}}, "", "  ")
	if err != nil {
		return fmt.Errorf("encode JUnit report: %w", err)
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("create JUnit report folder: %w", err)
		}
	}
	if err := os.WriteFile(path, append([]byte(xml.Header), append(b, '\n')...), 0o644); err != nil {
		return fmt.Errorf("write JUnit report: %w", err)
	}
	return nil
}

package main

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/outboxchaos/outboxchaos/checker"
	"github.com/outboxchaos/outboxchaos/scenarios"
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

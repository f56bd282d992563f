package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"reflect"

	"github.com/outboxchaos/outboxchaos/checker"
	"github.com/outboxchaos/outboxchaos/scenarios"
)

// scenarioShow prints a named scenario as the JSON `scenario run --file`
// reads.
func scenarioShow(args []string, stdout, stderr io.Writer) error {
	if len(args) != 1 {
		printNames(stderr)
		return usagef("usage: outboxchaos scenario show NAME")
	}
	s, ok := scenarios.Lookup(args[0])
	if !ok {
		s, ok = scenarios.LookupPeerCase(args[0])
	}
	if !ok {
		printNames(stderr)
		return usagef("unknown scenario %q", args[0])
	}
	_, err := stdout.Write(s.JSON())
	return err
}

// loadScenario reads a scenario file, or a run.json a run wrote (then the
// record comes back too, to replay with its seed and canary).
func loadScenario(path string) (*scenarios.Scenario, *checker.Record, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, usagef("read scenario file: %v", err)
	}
	s, rec, err := scenarios.Parse(b)
	if err != nil {
		return nil, nil, usagef("%s: %v", path, err)
	}
	return s, rec, nil
}

// compareRecorded says whether a replay reached the recorded verdict.
func compareRecorded(rec checker.Record, res scenarios.Result) string {
	was, now := rec.Verdict, res.Verdict
	was.Details, now.Details = nil, nil
	pass := rec.Failure == "" && rec.Verdict.OK()
	switch {
	case reflect.DeepEqual(was, now) && pass == res.Pass():
		return "    replay: same verdict as recorded"
	default:
		return fmt.Sprintf("    replay: verdict differs from the recording\n      recorded: pass=%v %s\n      replayed: pass=%v %s", pass, rec.Verdict, res.Pass(), res.Verdict)
	}
}

// scenarioCheck recomputes the verdict of recorded runs offline: no
// services, only the checker.
func scenarioCheck(paths []string, stdout io.Writer) error {
	if len(paths) == 0 {
		return usagef("usage: outboxchaos scenario check RUN.json…")
	}
	failed := 0
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return usagef("read run record: %v", err)
		}
		var rec checker.Record
		if err := json.Unmarshal(b, &rec); err != nil {
			return usagef("%s: not a run record: %v", p, err)
		}
		v, err := checker.Verify(rec)
		verdict := "PASS"
		if err != nil || !v.OK() {
			verdict, failed = "FAIL", failed+1
		}
		fmt.Fprintf(stdout, "VERDICT %s %s (row %s) seed=%d: %s\n", verdict, rec.Scenario, rec.Row, rec.Seed, v)
		if err != nil {
			fmt.Fprintf(stdout, "    %v\n", err)
		}
		for _, d := range v.Details {
			fmt.Fprintf(stdout, "    %s\n", d)
		}
	}
	if failed > 0 {
		return errVerdictFailed
	}
	return nil
}

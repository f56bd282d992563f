//go:build !pod

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/outboxchaos/outboxchaos/checker"
	"github.com/outboxchaos/outboxchaos/scenarios"
	"github.com/outboxchaos/outboxchaos/scenarios/catalogue"
	"github.com/outboxchaos/outboxchaos/scenarios/scenario"
)

// scenarioShow prints a named scenario as the JSON `scenario run --file`
// reads.
func scenarioShow(args []string, stdout, stderr io.Writer) error {
	fs := subcommandFlags("scenario show", "NAME", scenarioSubcommands[1][1], stderr)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("usage: outboxchaos scenario show NAME\n%s", validNames())
	}
	name := fs.Arg(0)
	s, ok := catalogue.Lookup(name)
	if !ok {
		s, ok = catalogue.LookupPeerCase(name)
	}
	if !ok {
		return usagef("unknown scenario %q\n%s", name, validNames())
	}
	_, err := stdout.Write(s.JSON())
	return err
}

// loadScenario reads a scenario file, or a run.json a run wrote or its
// folder (then the record comes back too, to replay with its seed and
// canary).
func loadScenario(path string) (*scenario.Scenario, *checker.Record, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		path = filepath.Join(path, "run.json") // the run folder a run printed
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, usagef("read scenario file: %v", err)
	}
	s, rec, err := scenario.Parse(b)
	if err != nil {
		return nil, nil, usagef("%s: %v", path, err)
	}
	return s, rec, nil
}

// compareRecorded says whether a replay reached the recorded verdict.
func compareRecorded(rec checker.Record, res scenarios.Result) string {
	was, now := rec.Verdict, res.Verdict
	was.Details, now.Details = nil, nil
	recorded := scenarios.OutcomePass
	switch {
	case rec.NotJudged != "":
		recorded = scenarios.OutcomeError
	case rec.Failure != "" || !rec.Verdict.OK():
		recorded = scenarios.OutcomeFail
	}
	switch {
	case reflect.DeepEqual(was, now) && recorded == res.Outcome():
		return "    replay: same verdict as recorded"
	default:
		return fmt.Sprintf("    replay: verdict differs from the recording\n      recorded: %s %s\n      replayed: %s %s", recorded, rec.Verdict, res.Outcome(), res.Verdict)
	}
}

// readRecord reads the run record at path: a run.json, or the run folder
// the harness printed (its run.json). Anything else, valid JSON or not, is
// a usage error saying it is not a run record.
func readRecord(path string) (checker.Record, error) {
	var rec checker.Record
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		path = filepath.Join(path, "run.json")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return rec, usagef("read run record: %v", err)
	}
	// A record names its scenario and carries its history and final state.
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(b, &keys); err != nil {
		return rec, usagef("%s is not a run record (want the run.json a run wrote, or its folder): %v", path, err)
	}
	for _, k := range []string{"scenario", "history", "state"} {
		if _, ok := keys[k]; !ok {
			return rec, usagef("%s is not a run record (want the run.json a run wrote, or its folder): no %q", path, k)
		}
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		return rec, usagef("%s is not a run record: %v", path, err)
	}
	if rec.Scenario == "" {
		return rec, usagef("%s is not a run record: its scenario has no name", path)
	}
	return rec, nil
}

// scenarioCheck recomputes the verdict of recorded runs offline: no
// services, only the checker.
func scenarioCheck(args []string, stdout, stderr io.Writer) error {
	fs := subcommandFlags("scenario check", "RUN.json|RUN-FOLDER…", scenarioSubcommands[3][1], stderr)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	paths := fs.Args()
	if len(paths) == 0 {
		return usagef("usage: outboxchaos scenario check RUN.json|RUN-FOLDER…")
	}
	// Every input is read first: a path that is no run record is a usage
	// error before any verdict is printed.
	var recs []checker.Record
	for _, p := range paths {
		rec, err := readRecord(p)
		if err != nil {
			return err
		}
		recs = append(recs, rec)
	}
	var outs []scenarios.Outcome
	for _, rec := range recs {
		o, v, err := scenarios.Recheck(rec)
		outs = append(outs, o)
		if o == scenarios.OutcomeError {
			// As scenario run prints it: the counts judged nothing.
			fmt.Fprintf(stdout, "VERDICT ERROR %s (row %s) seed=%d: not judged: %s\n", rec.Scenario, rec.Row, rec.Seed,
				strings.ReplaceAll(err.Error(), "\n", "\n    "))
			continue
		}
		fmt.Fprintf(stdout, "VERDICT %s %s (row %s) seed=%d: %s\n", o, rec.Scenario, rec.Row, rec.Seed, v)
		if err != nil {
			fmt.Fprintf(stdout, "    %v\n", err)
		}
		for _, d := range v.Details {
			fmt.Fprintf(stdout, "    %s\n", d)
		}
	}
	return outcomeErr(scenarios.Worst(outs...))
}

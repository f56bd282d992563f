//go:build !pod

package main

import "github.com/outboxchaos/outboxchaos/scenarios"

// The harness's commands, beside the pipeline's (main.go).
func init() {
	addCommands(map[string]command{
		"demo":        {"run a small end-to-end batch in a scratch schema and print each notification", runDemo, false},
		"scenario":    {"list, show, run or check the named fault-injection scenarios", runScenario, false},
		"canary":      {"enable each deliberate bug in turn and check a scenario catches it", runCanary, false},
		"crashpoints": {"crash every process at every automatic crash point of a small workload and check the contract", runCrashpoints, false},
		"explore":     {"run a budget of random fault schedules (or one shard of it, or one again) and check the contract", runExplore, false},
		"report":      {"run scenarios, random schedules and canaries; write artifacts/RELIABILITY.md (make report: reports/)", runReport, false},
		"peers":       {"run every relay under test (ours, Watermill, River) through the peer cases; write artifacts/PEERS.md (make peers: reports/)", runPeers, false},
		"simulate":    {"simulate a production day on the real pipeline, compressed; write artifacts/SIMULATION.md (make simulate: reports/; capacity: the capacity table)", runSimulate, false},
		"ledger":      {"fold the exploration ledgers of a budget's shards (explore --shard K/N on a CI matrix) into one: ledger merge", runLedger, false},
		"audit":       {"judge a production outbox, inbox and the vendor's delivery report by the checker's invariants, read-only", runAudit, false},
	})
}

// outcomeErr is the command's error for the worst outcome of its runs.
func outcomeErr(o scenarios.Outcome) error {
	switch o {
	case scenarios.OutcomeFail:
		return errVerdictFailed
	case scenarios.OutcomeError:
		return errNotJudged
	default:
		return nil
	}
}

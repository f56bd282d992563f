package run

import (
	"testing"

	"github.com/outboxchaos/outboxchaos/system/config"
)

// keptInScenarioRuns are the duration settings a scenario run keeps at
// their production value, and why: each bounds how long a connection
// attempt or a silent peer may take, which no scenario waits out (a link
// a fault cuts is cut for the pod at once).
var keptInScenarioRuns = map[string]string{
	"amqp-heartbeat":     "a broker that stops answering is noticed by the connection's errors first; the infrastructure scenarios set their own",
	"amqp-dial-timeout":  "a dial to a proxy that refuses fails at once",
	"pg-connect-timeout": "a connect to a proxy that refuses fails at once",
}

// Every duration setting is compressed for the scenario runs or named in
// keptInScenarioRuns: a setting added to config at its production value
// (minutes) would otherwise make a run wait minutes without a word.
func TestCompressedCoversEveryDuration(t *testing.T) {
	t.Parallel()
	prod, comp := config.Default(), Compressed()
	ps, cs := prod.DurationSettings(), comp.DurationSettings()
	for i, p := range ps {
		_, kept := keptInScenarioRuns[p.Name]
		switch same := *p.Value == *cs[i].Value; {
		case same && !kept:
			t.Errorf("%s keeps its production value %v in scenario runs: compress it in Compressed, or name it in keptInScenarioRuns with why", p.Name, *p.Value)
		case !same && kept:
			t.Errorf("%s is compressed (%v → %v) but named as kept", p.Name, *p.Value, *cs[i].Value)
		}
	}
	for name := range keptInScenarioRuns {
		found := false
		for _, p := range ps {
			found = found || p.Name == name
		}
		if !found {
			t.Errorf("keptInScenarioRuns names %s, which is no duration setting", name)
		}
	}
}

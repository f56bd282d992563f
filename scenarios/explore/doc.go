// Package explore searches for the windows nobody named: it draws random
// schedules (Generate, the swarm's settings and fault families, sustained
// load, cut job runs, vendor conversations, held pairs and stale actors),
// turns each into a scenario.Scenario and runs it on the same engine as
// the catalogue's entries, within a budget or a shard of one, guided by
// what earlier runs reached (RunGuided). It also sweeps: every crash point
// a workload passes (Discover, Sweep's canaries, AlertWindows), and counts
// what the runs reached (Coverage) so a report can say what was not.
//
// Every choice goes through a Draw, so a schedule replays from its seed or
// from a saved failfile.
package explore

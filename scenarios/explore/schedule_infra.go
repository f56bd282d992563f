package explore

import "github.com/outboxchaos/outboxchaos/faults"

// nodeFaultKinds are the infrastructure faults a random schedule draws, and
// the nodes of a single-broker run they may hit.
var (
	nodeFaultKinds = []string{faults.KindCrash, faults.KindRestart, faults.KindFreeze}
	infraNodes     = []string{"rabbitmq", "postgres"}
)

// GenerateInfra draws a schedule as Generate does, plus one or two
// infrastructure faults (a crash, a graceful restart or a freeze of the
// broker or the database, never two on one node) on the schedule's own
// time axis. Its scenario
// runs on containers of its own (Scenario.Infra "single").
func GenerateInfra(d Draw) Schedule {
	s := Generate(d)
	// One fault per node at a time, as a nemesis acts on a node: the
	// second fault, if any, hits the other node.
	first := d.Int("infra node", 0, len(infraNodes)-1)
	for i := range d.Int("infra faults", 1, 2) {
		spec := faults.Spec{Kind: nodeFaultKinds[d.Int("infra kind", 0, len(nodeFaultKinds)-1)], Node: infraNodes[(first+i)%len(infraNodes)]}
		at := d.Int("infra at ms", 0, 2000)
		s.Faults = append(s.Faults, window(spec, at, d.Int("infra for ms", 200, 2500)))
	}
	return s
}

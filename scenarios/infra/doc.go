// Package infra runs the infrastructure scenarios (catalogue.Infra),
// their canaries and random schedules with infrastructure faults, each on
// containers of its own (package infra at the module root), never on the
// shared services. Its tests need the containers build tag and a Docker
// engine:
//
//	make infra    # or: go test -tags containers ./scenarios/infra/
//
// Without an engine they skip with a message saying how to get one; with
// CI=true they fail instead. A random schedule that fails is saved under
// artifacts/ as JSON; TestInfraReplay runs it again, as often as asked,
// with every timeline:
//
//	make infra-replay SCHEDULE=artifacts/infra-property-2.schedule.json REPLAYS=5
package infra

# outboxchaos — see README.md.
SHELL     := /bin/bash
GO        ?= go
BIN       := bin/outboxchaos
COVER_BIN := bin/outboxchaos-cover
# VCS stamps the commit into the binary (outboxchaos version) where git is
# at hand, even where GOFLAGS says -buildvcs=false (as on this machine kind).
VCS       := -buildvcs=auto
NAME      ?=
SEED      ?=
CHECKS    ?= 30
# CHAOSFLAGS adds go test flags to make chaos, e.g. CHAOSFLAGS=-failfast.
CHAOSFLAGS ?=
# CHAOSPAR is how many of the chaos suite's runs go at once (go test
# -parallel; every test of the suite is parallel), LANES how many of them
# are TestProperty's random schedules (the same SEED and LANES draw the
# same schedules).
CHAOSPAR  ?= 4
LANES     ?= 4
# SHARD=K/N runs shard K of N of make chaos (or make crashpoints): every N-th
# named scenario, canary and crash point, and its share of CHECKS random
# schedules from a seed derived from SEED and K/N. Replay one shard alone
# with the same SEED and SHARD.
SHARD     ?=
ART       ?= artifacts
# gotestsum and actionlint are tools of go.mod (go get -tool), pinned by
# go.sum and built from the module cache: nothing is fetched at run time.
GOTESTSUM := $(GO) tool gotestsum
# make chaos draws a fresh seed each run and prints it; SEED=… replays one.
CHAOSSEED := $(if $(SEED),$(SEED),$(shell date +%s%N | cut -c1-15))

# The relays under test we did not write (peers/): Watermill in the root module,
# River twice from one nested module (go.mod: v0.51.2, go047.mod: v0.47.0).
PEER_BINS := bin/peer-watermill bin/peer-river047 bin/peer-river0512 bin/peer-sendrecord bin/peer-jetstream

.PHONY: actionlint all build cover-bin images infra infra-replay peer-bins peers demo test test-load unit vet fmt-check scenario scenarios canaries crashpoints explore chaos chaos-load report reports simulate simulate-short capacity bench bench-quick clean

all: build

# build: the harness and, beside it, the pods' build (the pipeline's
# commands alone, -tags pod), which the harness starts its pods from.
build:
	$(GO) build $(VCS) -o $(BIN) ./cmd/outboxchaos
	$(GO) build $(VCS) -tags pod -o $(BIN)-pod ./cmd/outboxchaos

# The infrastructure scenarios (scenarios/infra) on containers of their own.
# INFRA_CHECKS random schedules with infrastructure faults; INFRAFLAGS adds
# go test flags (e.g. INFRAFLAGS='-run TestInfraScenario/broker-freeze').
INFRA_CHECKS ?= 3
INFRAFLAGS   ?=

## images: start a Docker engine if none runs, then build (or reuse) the offline Postgres and RabbitMQ images; prints their names
images:
	@bash .ci/images/docker-up
	@bash .ci/images/build

## infra: the infrastructure scenarios, their canaries, INFRA_CHECKS random schedules and the demo, each on its own containers (needs Docker; OUTBOXCHAOS_PG_IMAGE / OUTBOXCHAOS_RABBITMQ_IMAGE choose the images, make images builds them offline)
infra:
	@mkdir -p $(ART)
	TESTCONTAINERS_RYUK_DISABLED=true $(GOTESTSUM) --junitfile $(ART)/infra-junit.xml --format testname -- \
		-count=1 -timeout 40m -parallel 2 $(INFRAFLAGS) -tags containers ./scenarios/infra/ \
		-rapid.checks=$(INFRA_CHECKS) -v 2>&1 | tee $(ART)/infra.log; exit $${PIPESTATUS[0]}
	TESTCONTAINERS_RYUK_DISABLED=true $(GO) test -count=1 -timeout 15m -tags containers ./infra/ ./system/testenv/

## infra-replay: run the schedule a failing infrastructure check saved (SCHEDULE=artifacts/….schedule.json) REPLAYS times, as many at once as INFRA_PAR, each on its own containers, with every timeline
REPLAYS   ?= 5
INFRA_PAR ?= 2
infra-replay:
	@test -n "$(SCHEDULE)" || { echo "usage: make infra-replay SCHEDULE=artifacts/infra-property-N.schedule.json [REPLAYS=5] [INFRA_PAR=2]" >&2; exit 2; }
	TESTCONTAINERS_RYUK_DISABLED=true OUTBOXCHAOS_SCHEDULE=$(abspath $(SCHEDULE)) OUTBOXCHAOS_REPLAYS=$(REPLAYS) \
		$(GO) test -count=1 -timeout 60m -parallel $(INFRA_PAR) -tags containers -run '^TestInfraReplay$$' -v ./scenarios/infra/

## peer-bins: the peer relays' binaries (Watermill, River v0.47.0 and v0.51.2, send-then-record, the JetStream design) and the Node.js relay's packages
peer-bins: build
	$(GO) build -o bin/peer-watermill ./peers/cmd/peer-watermill
	$(GO) build -o bin/peer-sendrecord ./peers/cmd/peer-sendrecord
	$(GO) build -o bin/peer-jetstream ./peers/cmd/peer-jetstream
	cd peers/river && $(GO) build -o ../../bin/peer-river0512 .
	cd peers/river && $(GO) build -modfile=go047.mod -ldflags "-X main.version=v0.47.0 -X main.name=river047" -o ../../bin/peer-river047 .
	cd peers/node-relay && npm ci --no-audit --no-fund --loglevel=error

# NODE_RELAY is the Node.js relay judged through the process contract
# (docs/relay-contract.md) beside the registered peers.
NODE_RELAY := node peers/node-relay/relay.js

## peers: every relay under test (the registry and the Node.js relay through the process contract) × every peer case; writes reports/PEERS.md
# The page is written whatever the cells say (the designs it compares
# break the contract on purpose, exit 1); a cell not judged fails it.
peers: peer-bins
	./$(BIN) peers --impls all --out reports/PEERS.md --save reports/peers/matrix.json --relay-cmd "$(NODE_RELAY)" --relay-name node-relay $(PEERS_FLAGS) || [ $$? -eq 1 ]

## demo: a small end-to-end batch (enqueue -> relay -> worker -> fake vendor)
demo: build
	./$(BIN) demo

## test: gofmt, vet, actionlint, unit + integration tests with -race, the chaos suite, then a short simulated day
test: fmt-check vet actionlint unit chaos simulate-short

## actionlint: check the GitHub Actions workflows (.github/workflows), which cannot run here
actionlint:
	$(GO) tool actionlint -no-color

unit:
	$(GO) test -race -count=1 -timeout 15m ./...

## test-load: every unit and integration package (go test -race ./..., no build tags) 5 times, two packages at once, while a CPU hog keeps one core busy; a verdict that depends on the machine's speed fails here (log in $(ART)/test-load.log; COUNT=, P=, PKGS=, GOTESTFLAGS= narrow it)
test-load:
	@GO='$(GO)' ART='$(ART)' bash .ci/test-load

vet:
	$(GO) vet ./...
	$(GO) vet -tags chaos ./scenarios/...
	$(GO) vet -tags containers ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

## scenario: run one named scenario, e.g. make scenario NAME=confirm-timeout
scenario: build
	@if [ -z "$(NAME)" ]; then ./$(BIN) scenario list; echo; echo "usage: make scenario NAME=<name>"; exit 2; fi
	./$(BIN) scenario run $(NAME) $(if $(SEED),--seed $(SEED),)

# RUN=REGEX selects scenarios by name for make scenarios.
RUN       ?=

## scenarios: run the whole catalogue (RUN=REGEX, SHARD=K/N, SEED=…), one verdict line each; JUnit in $(ART)/scenarios-junit.xml
scenarios: build
	@mkdir -p $(ART)
	./$(BIN) scenario run all --quiet --artifacts $(ART) --junit $(ART)/scenarios-junit.xml $(if $(RUN),-run '$(RUN)',) $(if $(SHARD),--shard $(SHARD),) $(if $(SEED),--seed $(SEED),)

## canaries: enable each deliberate bug and check a scenario catches it (SEED=…)
canaries: build
	./$(BIN) canary $(if $(SEED),--seed $(SEED),)

# CRASHFLAGS adds crashpoints flags, e.g. CRASHFLAGS='--workload one --bound 1'.
CRASHFLAGS ?=

# PARALLEL is how many random schedules make explore runs at once.
PARALLEL  ?= 8

# LEDGER is the exploration ledger make explore and make crashpoints add
# their counts to; LEDGER=reports/explored.jsonl records them in the
# committed one, whose totals make report shows.
LEDGER    ?= $(ART)/explored.jsonl

## explore: CHECKS random schedules, PARALLEL at a time, each replayable alone (SEED=…, SHARD=K/N), counted in LEDGER ($(ART)/explored.jsonl unless LEDGER=reports/explored.jsonl); nightly: CHECKS=2000
explore: build
	@mkdir -p $(ART)
	./$(BIN) explore --checks $(CHECKS) --seed $(CHAOSSEED) --parallel $(PARALLEL) $(if $(SHARD),--shard $(SHARD),) --ledger $(LEDGER) --artifacts $(ART) --junit $(ART)/explore-junit.xml

## crashpoints: crash every process at every automatic crash point of each small workload (up to hit 3) and check the contract, counted in LEDGER as make explore's
crashpoints: build
	./$(BIN) crashpoints $(if $(SHARD),--shard $(SHARD),) --ledger $(LEDGER) --artifacts $(ART) $(CRASHFLAGS)

## chaos: named scenarios, canary sweep and CHECKS random schedules (SEED=… replays one), JUnit in $(ART)/
chaos:
	@mkdir -p $(ART)
	@echo "chaos: CHECKS=$(CHECKS) SEED=$(CHAOSSEED) LANES=$(LANES) CHAOSPAR=$(CHAOSPAR)$(if $(SHARD), SHARD=$(SHARD),)  (replay: make chaos SEED=$(CHAOSSEED) LANES=$(LANES)$(if $(SHARD), SHARD=$(SHARD),))"
	@rm -f $(ART)/race.*
	GORACE="log_path=$(abspath $(ART))/race" $(GOTESTSUM) --junitfile $(ART)/chaos-junit.xml --format testname -- \
		-race -count=1 -timeout 40m -parallel $(CHAOSPAR) $(CHAOSFLAGS) -tags chaos ./scenarios/ -rapid.checks=$(CHECKS) -rapid.seed=$(CHAOSSEED) -lanes=$(LANES) $(if $(SHARD),-shard=$(SHARD),) -v \
		2>&1 | tee $(ART)/chaos.log; rc=$${PIPESTATUS[0]}; \
	for f in $(ART)/race.*; do [ -e "$$f" ] || continue; echo "--- data race report $$f (the test named 'race detected during execution' ran beside it):"; cat "$$f"; done; exit $$rc

# chaos-load runs the named catalogue (LOADRUN) twice at once, each copy
# with -parallel=$(LOADPAR); HOG=1 also keeps one core busy (yes >/dev/null)
# while they run. A verdict must not depend on that load: both copies pass
# or the target fails. Logs: $(ART)/chaos-load-a.log and -b.log.
LOADRUN ?= ^TestScenario$$
LOADPAR ?= 8
HOG     ?=
LOADART := $(abspath $(ART))

## chaos-load: the named catalogue with -parallel=8 while a second copy runs beside it (HOG=1: and one core kept busy); fails if either copy fails
chaos-load:
	@mkdir -p $(LOADART)
	$(GO) test -c -race -tags chaos -o $(LOADART)/chaos-load.test ./scenarios/
	@cd scenarios && { \
		hog=; if [ -n "$(HOG)" ]; then yes > /dev/null & hog=$$!; trap 'kill $$hog' EXIT; fi; \
		run() { $(LOADART)/chaos-load.test -test.run '$(LOADRUN)' -test.parallel $(LOADPAR) -test.count 1 -test.timeout 30m -test.v > $(LOADART)/chaos-load-$$1.log 2>&1; }; \
		run b & b=$$!; run a; a=$$?; wait $$b; bs=$$?; \
		echo "chaos-load: copy a exit $$a ($$(grep -c -- '^    --- PASS' $(LOADART)/chaos-load-a.log) passed, $$(grep -c -- '^    --- FAIL' $(LOADART)/chaos-load-a.log) failed), copy b exit $$bs ($$(grep -c -- '^    --- PASS' $(LOADART)/chaos-load-b.log) passed, $$(grep -c -- '^    --- FAIL' $(LOADART)/chaos-load-b.log) failed)$(if $(HOG), with a CPU hog,)"; \
		[ $$a -eq 0 ] && [ $$bs -eq 0 ]; }

## report: run everything and write reports/RELIABILITY.md, adding its runs to the committed ledger reports/explored.jsonl
report: cover-bin
	@rm -rf $(ART)/cover && mkdir -p $(ART)/cover-harness
	GOCOVERDIR=$(ART)/cover-harness ./$(COVER_BIN) report --checks $(CHECKS) --cover-dir $(ART)/cover --ledger reports/explored.jsonl --out reports/RELIABILITY.md

## cover-bin: outboxchaos built with Go's coverage instrumentation of system/: pods given --cover-dir write what they ran (the error-branch map)
cover-bin:
	$(GO) build $(VCS) -cover -coverpkg=./system/...,./cmd/outboxchaos -o $(COVER_BIN) ./cmd/outboxchaos
	$(GO) build $(VCS) -tags pod -cover -coverpkg=./system/...,./cmd/outboxchaos -o $(COVER_BIN)-pod ./cmd/outboxchaos

## simulate: a production day on the real pipeline, compressed (DAY=sim/days/x.yaml, SEED=…); writes reports/SIMULATION.md and its charts
DAY ?=
simulate: build
	./$(BIN) simulate $(if $(DAY),--config $(DAY),) $(if $(SEED),--seed $(SEED),) --out reports/SIMULATION.md

## simulate-short: the short example day, for CI: fails if the contract breaks (its report goes to $(ART)/)
simulate-short: build
	@mkdir -p $(ART)
	./$(BIN) simulate --config sim/days/short.json --quiet --out $(ART)/SIMULATION-short.md

## capacity: the capacity tables, measured by simulating evenings and days; writes reports/CAPACITY.md
capacity: build
	./$(BIN) simulate capacity --out reports/CAPACITY.md

BENCH_FLAGS ?=

## bench: relay and worker throughput beside the raw limits and two classic relay designs, what a random schedule costs, and the audit of a generated month (a few minutes); writes reports/PERFORMANCE.md
bench: peer-bins
	$(GO) run ./bench/cmd/outboxbench -out reports/PERFORMANCE.md -peers bin -explore bin/outboxchaos -audit bin/outboxchaos $(BENCH_FLAGS)

## bench-quick: the same measurements on small sizes, for CI (well under a minute)
bench-quick:
	@mkdir -p $(ART)
	$(GO) run ./bench/cmd/outboxbench -quick -out $(ART)/PERFORMANCE-quick.md $(BENCH_FLAGS)

# The commands alone write under $(ART)/ (or --out); these targets are the
# ones that write the committed pages, each passing its reports/ path.
## reports: regenerate every committed page, one target after the other: reports/RELIABILITY.md (and the ledger), SIMULATION.md with its charts, CAPACITY.md, PERFORMANCE.md, PEERS.md with peers/matrix.json (hours)
reports:
	$(MAKE) report
	$(MAKE) simulate
	$(MAKE) capacity
	$(MAKE) bench
	$(MAKE) peers

clean:
	rm -rf bin artifacts

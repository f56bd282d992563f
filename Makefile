# outboxchaos — see README.md.
GO        ?= go
BIN       := bin/outboxchaos
NAME      ?=
SEED      ?=
CHECKS    ?= 30
ART       ?= artifacts
GOTESTSUM := $(GO) run gotest.tools/gotestsum@v1.13.0
RAPIDSEED := $(if $(SEED),-rapid.seed=$(SEED),)

.PHONY: all build demo test unit vet fmt-check scenario scenarios canaries chaos report bench bench-quick clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/outboxchaos

## demo: a small end-to-end batch (enqueue -> relay -> worker -> fake vendor)
demo: build
	./$(BIN) demo

## test: gofmt, vet, unit + integration tests with -race, then the chaos suite
test: fmt-check vet unit chaos

unit:
	$(GO) test -race -count=1 -timeout 15m ./...

vet:
	$(GO) vet ./...
	$(GO) vet -tags chaos ./scenarios/

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

## scenario: run one named scenario, e.g. make scenario NAME=confirm-timeout
scenario: build
	@if [ -z "$(NAME)" ]; then ./$(BIN) scenario list; echo; echo "usage: make scenario NAME=<name>"; exit 2; fi
	./$(BIN) scenario run $(NAME) $(if $(SEED),--seed $(SEED),)

## scenarios: run the whole catalogue
scenarios: build
	./$(BIN) scenario run all --quiet

## canaries: enable each deliberate bug and check a scenario catches it
canaries: build
	./$(BIN) canary

## chaos: named scenarios, canary sweep and CHECKS random schedules (SEED=… replays one), JUnit in $(ART)/
chaos:
	@mkdir -p $(ART)
	$(GOTESTSUM) --junitfile $(ART)/chaos-junit.xml --format testname -- \
		-race -count=1 -timeout 40m -tags chaos ./scenarios/ -rapid.checks=$(CHECKS) $(RAPIDSEED)

## report: run everything and write reports/RELIABILITY.md
report: build
	./$(BIN) report --checks $(CHECKS) --out reports/RELIABILITY.md

clean:
	rm -rf bin artifacts

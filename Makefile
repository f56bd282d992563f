# outboxchaos — see README.md.
GO        ?= go
BIN       := bin/outboxchaos
NAME      ?=
SEED      ?=
CHECKS    ?= 30
GOTESTSUM := $(GO) run gotest.tools/gotestsum@v1.13.0

.PHONY: all build demo test vet fmt-check scenario scenarios chaos report bench bench-quick clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/outboxchaos

## demo: a small end-to-end batch (enqueue -> relay -> worker -> fake vendor)
demo: build
	./$(BIN) demo

## test: vet, then every test (unit, integration and chaos scenarios) with -race
test: fmt-check vet
	$(GO) test -race -count=1 -timeout 20m -tags chaos ./...

vet:
	$(GO) vet -tags chaos ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

## scenario: run one named scenario, e.g. make scenario NAME=confirm-timeout
scenario: build
	@if [ -z "$(NAME)" ]; then ./$(BIN) scenario list; echo; echo "usage: make scenario NAME=<name>"; exit 2; fi
	./$(BIN) scenario run $(NAME)

## scenarios: run the whole catalogue
scenarios: build
	./$(BIN) scenario run all

clean:
	rm -rf bin artifacts

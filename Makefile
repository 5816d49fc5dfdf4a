# proxyscan: build, test, benchmark and maintenance targets.
GO       ?= go
BIN      ?= proxyscan
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo v0.1.0-dev)
COMMIT   ?= $(shell git rev-parse HEAD 2>/dev/null)
LDFLAGS  := -X github.com/proxyscan/proxyscan/cmd.version=$(VERSION) -X github.com/proxyscan/proxyscan/cmd.commit=$(COMMIT)
FUZZTIME ?= 30s

.PHONY: all build test update bench bench-load bench-compare fuzz lint docs verify clean

all: build

build:
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/proxyscan

test:
	$(GO) test ./...

# Rewrite golden files with the current output (review the diff!).
update:
	$(GO) test ./... -update

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

# Decoding of the generated 10,000-service export (JSON and YAML, fast and
# reference decoders), and loading plus every check on it.
bench-load:
	$(GO) test -run '^$$' -bench . -benchmem ./parsers/kube/ ./analyzer/load/

# Time `proxyscan analyze` of a generated 10,000-service dump and export
# against `iptables-restore --test` reading the same dump (needs root), then
# `proxyscan trace` of one packet and `proxyscan expect` of the node.
bench-compare: build
	./scripts/bench-compare.sh ./$(BIN)

# Fuzz every fuzz target for FUZZTIME each (.ci/run does it for 5s).
fuzz:
	GO=$(GO) FUZZTIME=$(FUZZTIME) ./scripts/fuzz.sh

lint:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./...
	$(GO) tool staticcheck ./...

docs:
	$(GO) run ./cmd/proxyscan checks -o markdown > docs/checks.md
	$(GO) run ./cmd/proxyscan docs --dir docs

verify: lint
	$(GO) run ./cmd/proxyscan checks -o markdown | diff -u docs/checks.md -
	$(GO) test ./cmd -run TestDocsCurrent
	$(GO) mod tidy -diff

clean:
	rm -f $(BIN)

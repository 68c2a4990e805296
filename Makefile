# hermes-wasm-exec: `make demo` runs a real example, `make check` the tests
# to run while developing, `make test` the whole suite (what CI runs).
#
# Two test tiers (docs/testing.md, Tiers):
#   make check  vet, then every package's unit and in-process tests, -race on
#               the concurrent packages; no root, no apt-get, no daemons, no
#               wine (HERMES_TEST_TIER=check: the tests that need a real
#               engine skip through internal/testenv.RealEngines, naming
#               make test).
#   make test   make check (with all of runtime/internal/strict and runtime/executor
#               under -race), then
#               .ci/deps (apt-get, as root), the remote backends' image, the
#               tests check skipped (dockerd, sshd, HAProxy, node, qemu, the
#               release; .ci/engines) and the Windows stage under wine.
# Each stage prints its wall time at its end: "stage NAME: 123 s".
GO ?= go
BIN := bin/hermes-wasm-exec
# One compilation cache for every test package, so the interpreter is
# compiled once per machine rather than once per package.
TEST_CACHE := $(CURDIR)/.cache/wasm
# go test's default of 10 minutes a package is too short on a loaded 2-core
# machine (docs/testing.md, Tests under load); a hung test still ends.
TEST_TIMEOUT ?= 60m
STAGE := bash .ci/stage
MODULE := github.com/hermes-agent/hermes-wasm-exec
# The packages whose tests run under -race, in both tiers: the concurrent
# ones (serve and its JSON-RPC peer, mcp's server, process trees, the
# backends, the project engine) and the other pure-Go packages.
RACE_DIRS := native hostfuncs cmd/hermes-wasm-exec/internal/serve cmd/hermes-wasm-exec/internal/jsonrpc \
	cmd/hermes-wasm-exec/internal/mcpserver config \
	$(patsubst $(MODULE)/%,%,$(filter $(MODULE)/internal/%,$(shell $(GO) list ./internal/...)))
# The two big concurrent packages, the strict engine and the executor: the
# whole of each under -race is too slow for check's five minutes, so check
# runs their concurrent tests under -race and the rest without, and make
# test runs both whole under -race (RACE_STRICT=. RACE_EXECUTOR=.).
#   strict: kernels, close (also during a compile), interrupt, stop,
#   concurrent runs, threads, large tool messages, the shared snapshot,
#   guest output handed over on a timer.
#   executor: sessions and their queue, kernels, slots and pools,
#   interrupt, close, contention, live output.
RACE_STRICT ?= TestStrictKernel|TestStrictClose|TestStrictInterrupt|TestStrictOutputKeptOnStop|TestStrictConcurrent|TestStrictThreads|TestStrictLargeToolMessages|TestSnapshotShared|TestGuestOutput
RACE_EXECUTOR ?= TestSession|TestKernel|TestSlot|TestInterrupt|TestClose|Concurren|WarmPool|TestLogIdleKernel|TestAsClosed|TestLiveOutput|TestOutputKeptOnStop
# The tests of runtime/internal/strict that measure memory, which -race inflates
# (they skip under it through internal/testenv.SkipUnderRace): make test
# runs them without -race too.
NORACE_STRICT := TestStrictHostMemoryBounded|TestStdlibFSZoneOpensShareMemory
# The rest run without -race.
PLAIN_PKGS = $(filter-out $(addprefix $(MODULE)/,$(RACE_DIRS) runtime/internal/strict runtime/executor),$(shell $(GO) list ./...))
# The tests check skipped for want of a real engine, for .ci/engines.
SKIPPED := $(CURDIR)/.cache/engine-tests
CHECK_ENV := HERMES_TEST_TIER=check HERMES_TEST_SKIPPED=$(SKIPPED) HERMES_WASM_CACHE_DIR=$(TEST_CACHE)

.PHONY: all assets assets-rebuild compat-cpython build install release image check check-unit check-race check-strict check-executor test test-windows demo bench vet fuzz clean

all: build

# The WASI CPython and its standard library are committed in
# pyodide-assets/dist. `make assets` checks them, and the recipe they were
# built from, against the pins (seconds, no root).
assets:
	$(GO) run ./pyodide-assets/build

# Rebuilds them from Debian source packages (pyodide-assets/cpython; about 3
# minutes, as root: in a Debian trixie chroot made with debootstrap the first
# time and cached, printing each command) and fails unless the bytes equal the pins. REPIN=1 accepts a new
# build after a deliberate recipe change and prints the pins to commit.
assets-rebuild:
	$(GO) run ./pyodide-assets/build -rebuild $(if $(REPIN),-repin)

# CPython's own regression tests (Lib/test of the interpreter's version,
# from Debian's packages, test-only) in strict mode, module by module, beside
# the same run in Debian trixie's native python3.13 (a chroot: root), and the
# table in COMPATIBILITY.md ("CPython's own regression tests"). Long (on the
# 2-core VM, two modules at once: native 30 min, strict 10 min), so in
# neither check nor test. ARGS passes flags: ARGS=-resume goes on with the
# modules not yet run, ARGS=-native=false runs strict mode alone,
# ARGS=-table-only rewrites the table from .cache/regrtest.
compat-cpython:
	HERMES_WASM_CACHE_DIR=$(TEST_CACHE) nice -n 10 $(GO) run ./pyodide-assets/regrtest -j 2 $(ARGS)

build: assets
	$(GO) build -o $(BIN) ./cmd/hermes-wasm-exec

# Installs hermes-wasm-exec where `go install` puts programs ($(go env GOBIN),
# else $(go env GOPATH)/bin) and says where, and whether that dir is on PATH.
install: assets
	$(GO) install ./cmd/hermes-wasm-exec
	@dir=$$($(GO) env GOBIN); [ -n "$$dir" ] || dir=$$($(GO) env GOPATH)/bin; \
	echo "installed $$dir/hermes-wasm-exec"; \
	case ":$$PATH:" in \
	*":$$dir:"*) echo "$$dir is on PATH: run hermes-wasm-exec --help";; \
	*) echo "$$dir is NOT on PATH: add it, e.g. echo 'export PATH=\"$$dir:\$$PATH\"' >> ~/.profile, then open a new shell";; \
	esac

# Linters at pinned versions, run with `go run pkg@version` rather than
# go.mod tool directives, which would put them in embedders' module graphs
# (RATIONALE.md, Dependencies).
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
DEADCODE := golang.org/x/tools/cmd/deadcode@v0.52.0

# deadcode lists the functions that neither a command nor a test reaches,
# and exits 0: any line it prints fails the target.
vet:
	@out=$$(gofmt -l .) && if [ -n "$$out" ]; then echo "$$out"; echo "gofmt: run gofmt -w on these files"; exit 1; fi
	$(GO) vet ./...
	GOOS=windows $(GO) vet ./...
	GOOS=windows $(GO) build ./...
	GOOS=darwin $(GO) vet ./...
	GOOS=darwin $(GO) build ./...
	$(GO) run $(STATICCHECK) ./...
	@out=$$($(GO) run $(DEADCODE) -test ./...) && if [ -n "$$out" ]; then \
		echo "$$out"; echo "deadcode: unreachable functions: delete them"; exit 1; fi

# What to run while developing: no root, no network daemons, no wine. The
# test stages run side by side (2 cores are kept busy while one package
# runs long), each stage's output shown once it ends.
check:
	@mkdir -p .cache && rm -f $(SKIPPED)
	@$(STAGE) assets $(GO) run ./pyodide-assets/build
	@$(STAGE) vet $(MAKE) --no-print-directory vet
	@$(MAKE) --no-print-directory -j4 --output-sync=target check-unit check-race check-strict check-executor

GO_TEST := env $(CHECK_ENV) $(GO) test -count=1 -timeout $(TEST_TIMEOUT)

check-unit:
	@$(STAGE) unit $(GO_TEST) $(PLAIN_PKGS)

check-race:
	@$(STAGE) race $(GO_TEST) -race $(addprefix ./,$(addsuffix /,$(RACE_DIRS)))

# runtime/internal/strict and runtime/executor: their concurrent tests under -race,
# the rest without; or, with RACE_x=., all under -race (and strict's memory
# measurements without).
check-strict:
ifeq ($(RACE_STRICT),.)
	@$(STAGE) strict-race $(GO_TEST) -race ./runtime/internal/strict/
	@$(STAGE) strict-norace $(GO_TEST) -run '^($(NORACE_STRICT))$$' ./runtime/internal/strict/
else
	@$(STAGE) strict $(GO_TEST) -skip '$(RACE_STRICT)' ./runtime/internal/strict/
	@$(STAGE) strict-race $(GO_TEST) -race -run '$(RACE_STRICT)' ./runtime/internal/strict/
endif

check-executor:
ifneq ($(RACE_EXECUTOR),.)
	@$(STAGE) executor $(GO_TEST) -skip '$(RACE_EXECUTOR)' ./runtime/executor/
endif
	@$(STAGE) executor-race $(GO_TEST) -race -run '$(RACE_EXECUTOR)' ./runtime/executor/

# The whole suite, as CI runs it (.ci/run): check, then the real engines.
test:
	@$(STAGE) check $(MAKE) --no-print-directory check RACE_STRICT=. RACE_EXECUTOR=.
	@$(STAGE) deps bash .ci/deps
	@$(STAGE) image $(GO) run ./internal/backend/backendtest/prepare
	@$(STAGE) engines env HERMES_WASM_CACHE_DIR=$(TEST_CACHE) GO=$(GO) TEST_TIMEOUT=$(TEST_TIMEOUT) \
		RACE_DIRS="$(RACE_DIRS) runtime/internal/strict runtime/executor" bash .ci/engines $(SKIPPED)
	@$(STAGE) windows env GO=$(GO) bash .ci/windows

# The Windows stage of `make test` alone: every package's tests as Windows
# binaries under wine 10 in a Debian trixie chroot (.ci/windows; root,
# Linux; PKGS=... TESTFLAGS=... narrow it).
test-windows: assets
	GO=$(GO) bash .ci/windows

# Runs the data-pipeline example in strict mode on the demo project.
demo: build
	./$(BIN) run --mode strict --workdir testdata/project testdata/examples/data_pipeline.py

# Runs every fuzz target for FUZZTIME each (default 30s; `make fuzz
# FUZZTIME=5m` for longer) and prints the executions each reached.
FUZZTIME ?= 30s
fuzz: assets
	FUZZTIME=$(FUZZTIME) GO=$(GO) bash .ci/fuzz

# Static, reproducible binaries for five platforms and their SHA256SUMS in
# bin/release (.ci/release says how; VERSION=... to name them).
release:
	GO=$(GO) bash .ci/release

# A container image (deploy/Dockerfile) with the local Docker engine:
# TARGET=strict (default; the static binary alone) or TARGET=project
# PYTHON_BASE=IMAGE (with python3); IMAGE names it (docs/service.md).
image: assets
	GO=$(GO) bash .ci/image

bench: build
	./$(BIN) bench

clean:
	rm -rf bin .cache

# hermes-wasm-exec: `make demo` runs a real example, `make test` the whole suite.
GO ?= go
BIN := bin/hermes-wasm-exec
# One compilation cache for every test package, so the interpreter is
# compiled once per machine rather than once per package.
TEST_CACHE := $(CURDIR)/.cache/wasm
# go test's default of 10 minutes a package is too short on a loaded 2-core
# machine (docs/testing.md, Tests under load); a hung test still ends.
TEST_TIMEOUT ?= 60m
# The session-kernel tests the race detector runs in runtime/executor: many
# sessions on few kernels (the whole package under -race would take long).
RACE_EXECUTOR := TestSessionKernelContention|TestSessionKernelWait|TestSlot|TestKernelPin

.PHONY: all assets assets-rebuild build release image test test-windows demo bench vet fuzz clean

all: build

# The WASI CPython and its standard library are committed in
# pyodide-assets/dist. `make assets` checks them, and the recipe they were
# built from, against the pins (seconds, no root).
assets:
	$(GO) run ./pyodide-assets/build

# Rebuilds them from Debian source packages (pyodide-assets/cpython; about 4
# minutes; as root it installs the toolchain with apt-get, printing each
# command) and fails unless the bytes equal the pins. REPIN=1 accepts a new
# build after a deliberate recipe change and prints the pins to commit.
assets-rebuild:
	$(GO) run ./pyodide-assets/build -rebuild $(if $(REPIN),-repin)

build: assets
	$(GO) build -o $(BIN) ./cmd/hermes-wasm-exec

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

# .ci/deps installs the host tools the tests need beyond Go when they are
# missing (as root, with apt-get, printing each command): qemu-user-static,
# docker.io, debootstrap, openssh-server, openssh-client, haproxy, nodejs, npm.
test: assets vet
	bash .ci/deps
	$(GO) run ./internal/backend/backendtest/prepare
	HERMES_WASM_CACHE_DIR=$(TEST_CACHE) $(GO) test -count=1 -timeout $(TEST_TIMEOUT) ./...
	$(GO) test -count=1 -race -timeout $(TEST_TIMEOUT) ./config/ ./hostfuncs/ ./native/ ./internal/...
	HERMES_WASM_CACHE_DIR=$(TEST_CACHE) $(GO) test -count=1 -race -timeout $(TEST_TIMEOUT) -run '$(RACE_EXECUTOR)' ./runtime/executor/
	GO=$(GO) bash .ci/windows

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

# hermes-wasm-exec: `make demo` runs a real example, `make test` the whole suite.
GO ?= go
BIN := bin/hermes-wasm-exec
# One compilation cache for every test package, so the interpreter is
# compiled once per machine rather than once per package.
TEST_CACHE := $(CURDIR)/.cache/wasm

.PHONY: all assets build test demo bench vet fuzz clean

all: build

# Build the pinned WASI CPython and its standard library from Debian source
# packages (pyodide-assets/cpython), or take them from the build cache
# (~/.cache/hermes-wasm-exec/cpython, by recipe hash). As root it installs the
# missing toolchain with apt-get, printing each command. Idempotent: verified
# files in pyodide-assets/dist are kept.
assets:
	$(GO) run ./pyodide-assets/build

build: assets
	$(GO) build -o $(BIN) ./cmd/hermes-wasm-exec

vet:
	$(GO) vet ./...
	GOOS=windows $(GO) vet ./...
	GOOS=windows $(GO) build ./...
	GOOS=darwin $(GO) build ./...

test: assets vet
	HERMES_WASM_CACHE_DIR=$(TEST_CACHE) $(GO) test -count=1 ./...
	$(GO) test -count=1 -race ./config/ ./runtime/shared/ ./hostfuncs/ ./native/ ./internal/...

# Runs the data-pipeline example in strict mode on the demo project.
demo: build
	./$(BIN) run --mode strict --workdir testdata/project testdata/examples/data_pipeline.py

# Runs every fuzz target for FUZZTIME each (default 30s; `make fuzz
# FUZZTIME=5m` for longer) and prints the executions each reached.
FUZZTIME ?= 30s
fuzz: assets
	FUZZTIME=$(FUZZTIME) GO=$(GO) bash .ci/fuzz

bench: build
	./$(BIN) bench

clean:
	rm -rf bin .cache

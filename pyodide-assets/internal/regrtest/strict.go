package regrtest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/runtime/executor"
)

// Strict runs test modules in strict mode through the public executor, as
// an embedder would: each module in a fresh interpreter (no session), with
// the default memory and disk limits, no tools (so a test's subprocess
// cannot reach the host's terminal), and the test package read-only as a
// wasm package (code_execution.wasm_packages), so `import test.test_x`
// finds it while the script's cwd is strict mode's private dir, as regrtest
// runs a test in a temp dir.
type Strict struct {
	ex      *executor.Executor
	home    string
	timeout time.Duration
}

// NewStrict starts the executor over the test package dir lib (see
// Testsuite). Close ends it.
func NewStrict(lib string, timeout time.Duration) (*Strict, error) {
	home, err := os.MkdirTemp("", "hermes-regrtest-home-")
	if err != nil {
		return nil, fmt.Errorf("regrtest: %w", err)
	}
	cfg := config.Default()
	cfg.CodeExecution.Mode = config.ModeStrict
	cfg.CodeExecution.WasmPackages = []string{lib}
	cfg.CodeExecution.Timeout = max(int(timeout.Seconds()), config.MinTimeout)
	cfg.CodeExecution.MaxToolCalls = 0
	ex := executor.New(executor.Options{Config: &cfg, HermesHome: home})
	return &Strict{ex: ex, home: home, timeout: timeout}, nil
}

// Close ends the executor and removes its state dir.
func (s *Strict) Close() {
	s.ex.Close(context.Background())
	os.RemoveAll(s.home)
}

// Run runs module in a fresh strict interpreter.
func (s *Strict) Run(ctx context.Context, module string) Outcome {
	start := time.Now()
	work, err := os.MkdirTemp(s.home, "work-")
	if err != nil {
		return Outcome{Module: module, Status: StatusCrash, Error: "harness: " + err.Error()}
	}
	defer os.RemoveAll(work)
	none := 0
	res, err := s.ex.Execute(ctx, executor.Request{
		Code:         Script(module),
		Mode:         config.ModeStrict,
		Workdir:      work,
		Timeout:      s.timeout,
		MaxToolCalls: &none,
		Tools:        []string{},
	})
	took := time.Since(start).Seconds()
	if err != nil {
		return Outcome{Module: module, Status: StatusCrash, Error: "executor: " + err.Error(), Seconds: took}
	}
	if res.Status == config.StatusTimeout {
		return Outcome{Module: module, Status: StatusTimeout, Error: lastLines(res.Error, 3), Seconds: took}
	}
	o, perr := ParseOutput(module, res.Output)
	if perr != nil {
		why := res.Error
		if why == "" {
			why = res.Output
		}
		return Outcome{Module: module, Status: StatusCrash, Error: lastLines(why, 8), Seconds: took}
	}
	o.Seconds = took
	return o
}

// lastLines is the last n non-empty lines of s.
func lastLines(s string, n int) string {
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		if strings.TrimSpace(l) != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	out := strings.Join(lines, "\n")
	if len(out) > 1000 {
		out = "..." + out[len(out)-1000:]
	}
	return out
}

// NativeOutcome turns a native run's output into the module's outcome.
func NativeOutcome(module, stdout, stderr string, timedOut bool, runErr error, took time.Duration) Outcome {
	if timedOut {
		return Outcome{Module: module, Status: StatusTimeout, Seconds: took.Seconds()}
	}
	o, err := ParseOutput(module, stdout)
	if err != nil {
		why := stderr
		if runErr != nil {
			why += "\n" + runErr.Error()
		}
		return Outcome{Module: module, Status: StatusCrash, Error: lastLines(why, 8), Seconds: took.Seconds()}
	}
	o.Seconds = took.Seconds()
	return o
}

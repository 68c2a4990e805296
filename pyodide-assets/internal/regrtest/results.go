package regrtest

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

//go:embed runner.py
var runnerSource string

// resultPrefix starts the runner's result line (runner.py, RESULT_PREFIX).
const resultPrefix = "REGRTEST-RESULT "

// Script is the runner for one test module (a name under the test
// package: test_os, test_asyncio.test_tasks).
func Script(module string) string {
	return "MODULE = " + strconv.Quote(module) + "\n" + runnerSource
}

// How a module's run ended.
const (
	// StatusOK: the runner printed its result.
	StatusOK = "ok"
	// StatusTimeout: the module ran past the timeout.
	StatusTimeout = "timeout"
	// StatusCrash: the interpreter ended without the runner's result (a
	// trap, memory exhausted, an exit from a test).
	StatusCrash = "crash"
)

// Outcome is one module's run on one side (strict or native).
type Outcome struct {
	Module     string      `json:"module"`
	Status     string      `json:"status"`
	Passed     int         `json:"passed"`
	Failed     int         `json:"failed"`
	Skipped    int         `json:"skipped"`
	ModuleSkip string      `json:"module_skip,omitempty"`
	Error      string      `json:"error,omitempty"`
	Failures   []string    `json:"failures,omitempty"`
	Exceptions []Exception `json:"exceptions,omitempty"`
	// Skips are the reasons tests were skipped, counted, the most
	// frequent first.
	Skips []Exception `json:"skips,omitempty"`
	// Seconds is the wall time of the whole run, the interpreter's start
	// included.
	Seconds float64 `json:"seconds"`
}

// Exception is the last line of a failure's traceback and how many
// failures ended with it (or a skip reason and how many tests it
// skipped).
type Exception struct {
	Line  string `json:"line"`
	Count int    `json:"count"`
}

// passes says whether the module passed: tests of it ran and passed,
// none failed, it was not skipped as a whole.
func (o Outcome) passes() bool {
	return o.Status == StatusOK && o.Error == "" && o.Failed == 0 && o.ModuleSkip == "" && o.Passed > 0
}

// skippedWhole says whether the module was skipped as a whole: at import,
// in setUpModule, or every test of it.
func (o Outcome) skippedWhole() bool {
	return o.Status == StatusOK && o.Error == "" && o.Failed == 0 && (o.ModuleSkip != "" || o.Passed == 0)
}

// ParseOutput reads the runner's result line from a run's stdout (the
// last one, should a test print the prefix itself).
func ParseOutput(module, stdout string) (Outcome, error) {
	i := strings.LastIndex(stdout, "\n"+resultPrefix)
	if i < 0 {
		if !strings.HasPrefix(stdout, resultPrefix) {
			return Outcome{}, errors.New("no result line: the interpreter ended before the runner printed it")
		}
	} else {
		stdout = stdout[i+1:]
	}
	line, _, _ := strings.Cut(strings.TrimPrefix(stdout, resultPrefix), "\n")
	var o Outcome
	if err := json.Unmarshal([]byte(line), &o); err != nil {
		return Outcome{}, fmt.Errorf("the result line is not the runner's JSON: %w", err)
	}
	if o.Module != module {
		return Outcome{}, fmt.Errorf("the result line is of module %q, not %q", o.Module, module)
	}
	o.Status = StatusOK
	return o, nil
}

// Run is the results of one side's run, as kept in its JSON file.
type Run struct {
	// Side is "strict" or "native".
	Side string `json:"side"`
	// Interpreter names the python that ran the tests.
	Interpreter string `json:"interpreter"`
	// Machine and Date say where and when (of the last module run).
	Machine string    `json:"machine"`
	Date    time.Time `json:"date"`
	// Timeout is each module's limit, in seconds.
	Timeout float64 `json:"timeout_seconds"`
	// Seconds is the wall time of the run that made the file, with the
	// earlier ones it resumed.
	Seconds float64 `json:"seconds"`
	// Modules are the outcomes by module.
	Modules map[string]Outcome `json:"modules"`
}

// LoadRun reads a side's results file; a missing file is an empty Run.
func LoadRun(path, side string) (*Run, error) {
	r := &Run{Side: side, Modules: map[string]Outcome{}}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return r, nil
	}
	if err != nil {
		return nil, fmt.Errorf("regrtest: %w", err)
	}
	if err := json.Unmarshal(data, r); err != nil {
		return nil, fmt.Errorf("regrtest: %s: %w (remove it to start over)", path, err)
	}
	if r.Modules == nil {
		r.Modules = map[string]Outcome{}
	}
	return r, nil
}

// Save writes the Run to path, through a temporary file, so an
// interrupted run keeps every module it finished.
func (r *Run) Save(path string) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("regrtest: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("regrtest: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("regrtest: %w", err)
	}
	return os.Rename(tmp, path)
}

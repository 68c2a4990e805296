package regrtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"
)

// splitDirs are the test packages whose modules run one by one, as
// regrtest runs them (test.libregrtest.findtests, SPLITTESTDIRS): each
// test_*.py of the package and each package in it is a module of its own.
var splitDirs = map[string]bool{
	"test_asyncio": true, "test_concurrent_futures": true, "test_doctests": true,
	"test_future_stmt": true, "test_gdb": true, "test_inspect": true, "test_pydoc": true,
	"test_multiprocessing_fork": true, "test_multiprocessing_forkserver": true,
	"test_multiprocessing_spawn": true,
}

// AllModules lists the test modules of the test package dir lib, as
// regrtest finds them (test.libregrtest.findtests): test_*.py and test_*
// packages, the packages of splitDirs split into theirs, sorted.
func AllModules(lib string) ([]string, error) {
	top, err := modules(filepath.Join(lib, "test"))
	if err != nil {
		return nil, err
	}
	var mods []string
	for _, m := range top {
		if !splitDirs[m] {
			mods = append(mods, m)
			continue
		}
		sub, err := modules(filepath.Join(lib, "test", m))
		if err != nil {
			return nil, err
		}
		for _, s := range sub {
			mods = append(mods, m+"."+s)
		}
	}
	sort.Strings(mods)
	return mods, nil
}

// Side runs one module on one side.
type Side interface {
	Run(ctx context.Context, module string) Outcome
}

// RunSide runs modules on side with jobs at once, recording each outcome in
// run and saving it to path after each module, printing a line per module.
func RunSide(ctx context.Context, side Side, run *Run, path string, modules []string, jobs int, logf func(string, ...any)) error {
	start := time.Now()
	base := run.Seconds
	work := make(chan string)
	var mu sync.Mutex
	var saveErr error
	done := 0
	var wg sync.WaitGroup
	for range max(jobs, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for m := range work {
				o := side.Run(ctx, m)
				if ctx.Err() != nil {
					return // an interrupted module is not recorded
				}
				mu.Lock()
				done++
				run.Modules[m] = o
				run.Date = time.Now().UTC()
				run.Seconds = base + time.Since(start).Seconds()
				if err := run.Save(path); err != nil && saveErr == nil {
					saveErr = err
				}
				logf("%s [%d/%d] %s: %s (%.1f s)", run.Side, done, len(modules), m, summarize(o), o.Seconds)
				mu.Unlock()
			}
		}()
	}
feed:
	for _, m := range modules {
		select {
		case work <- m:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	if saveErr != nil {
		return saveErr
	}
	return ctx.Err()
}

// summarize is an outcome in a few words.
func summarize(o Outcome) string {
	switch {
	case o.Status != StatusOK:
		return o.Status + " " + firstLine(o.Error)
	case o.Error != "":
		return "error " + lastLines(o.Error, 1)
	case o.ModuleSkip != "":
		return "skipped: " + firstLine(o.ModuleSkip)
	}
	return fmt.Sprintf("%d passed, %d failed, %d skipped", o.Passed, o.Failed, o.Skipped)
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return l
}

// NativeSide runs modules in native chroots, one module at a time in
// each (after a module, every process left in its chroot is killed).
type NativeSide struct {
	// Chroots holds the chroots not running a module.
	Chroots chan *Chroot
	Timeout time.Duration
}

// Run runs module with a free chroot's python3.13.
func (n NativeSide) Run(ctx context.Context, module string) Outcome {
	c := <-n.Chroots
	defer func() { n.Chroots <- c }()
	start := time.Now()
	stdout, stderr, timedOut, err := c.Run(ctx, Script(module), n.Timeout)
	if ctx.Err() == nil && err != nil && stdout == "" && stderr == "" && !timedOut {
		return Outcome{Module: module, Status: StatusCrash, Error: err.Error(), Seconds: time.Since(start).Seconds()}
	}
	return NativeOutcome(module, stdout, stderr, timedOut, err, time.Since(start))
}

// Machine describes this machine for the table: host name, CPUs, kernel.
func Machine() string {
	host, _ := os.Hostname()
	cpu := "unknown CPU"
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(data), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				cpu = strings.TrimSpace(v)
				break
			}
		}
	}
	kernel := ""
	if data, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		kernel = ", Linux " + strings.TrimSpace(string(data))
	}
	return fmt.Sprintf("%s (%d × %s%s)", host, runtime.NumCPU(), cpu, kernel)
}

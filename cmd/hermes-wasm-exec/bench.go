package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/native"
	"github.com/hermes-agent/hermes-wasm-exec/runtime"
	"github.com/hermes-agent/hermes-wasm-exec/runtime/executor"
)

// benchToolScript times n no-op tool calls from inside the guest. The
// unconfigured web_search answers at once, so what is measured is the
// channel and the JSON on both sides.
const benchToolScript = `import time
from hermes_tools import web_search
n = %d
web_search("warm-up")
t = time.perf_counter()
for _ in range(n):
    web_search("x")
print((time.perf_counter() - t) / n * 1e6)
`

// benchCmd measures start-up and the tool round trip and prints a table.
// Numbers are medians over -n repetitions.
func benchCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	n := fs.Int("n", 5, "repetitions of each measurement")
	if err := fs.Parse(args); err != nil || *n < 1 {
		return exitUsage
	}
	ctx := context.Background()
	tmp, err := os.MkdirTemp("", "hermes-bench-")
	if err != nil {
		fmt.Fprintf(stderr, "bench: %v\n", err)
		return exitFailed
	}
	defer os.RemoveAll(tmp)
	cacheDir := filepath.Join(tmp, "cache")

	type row struct{ name, value, note string }
	var rows []row
	fail := func(what string, err error) int {
		fmt.Fprintf(stderr, "bench: %s: %v\n", what, err)
		return exitFailed
	}

	// Cold compile: an empty cache dir, once (it is slow).
	cold := runtime.NewStrict(runtime.Options{CacheDir: cacheDir, Progress: io.Discard})
	t := time.Now()
	if err := cold.Warm(ctx, 0); err != nil {
		return fail("cold compile", err)
	}
	rows = append(rows, row{"cold compile (empty cache)", ms(time.Since(t)), fmt.Sprintf("%d compile workers", goruntime.GOMAXPROCS(0))})
	cold.Close(ctx)

	var warm []time.Duration
	for range *n {
		e := runtime.NewStrict(runtime.Options{CacheDir: cacheDir, Progress: io.Discard})
		t := time.Now()
		if err := e.Warm(ctx, 0); err != nil {
			return fail("warm start", err)
		}
		warm = append(warm, time.Since(t))
		e.Close(ctx)
	}
	rows = append(rows, row{"start with a warm cache", ms(median(warm)), "load compiled code from disk"})

	os.Setenv(executor.CacheDirEnv, cacheDir)
	cfg := config.Default()
	ex := executor.New(executor.Options{Config: &cfg, HermesHome: tmp, Progress: io.Discard})
	defer ex.Close(ctx)
	python := native.Resolve(ctx, os.Getenv)
	for _, mode := range []string{"strict", "project"} {
		label, note := "", ""
		if mode == "project" {
			if python.Path == "" {
				rows = append(rows, row{"project mode", "-", "no host python found, skipped"})
				continue
			}
			label = "project: "
			note = "; " + filepath.Base(python.Path) + " " + python.Version
		}
		var inst []time.Duration
		for range *n {
			t := time.Now()
			res, err := ex.Execute(ctx, executor.Request{Code: "print(1)", Mode: mode, Workdir: tmp})
			if err != nil || res.Status != "success" {
				return fail(mode+" print(1)", fmt.Errorf("%v %s", err, res.Output))
			}
			inst = append(inst, time.Since(t))
		}
		what := "fresh instance + interpreter init + run"
		if mode == "project" {
			what = "private dir + socket + python child"
		}
		rows = append(rows, row{label + "print(1) in a warm process", ms(median(inst)), what + note})

		if self, err := os.Executable(); err == nil {
			var whole []time.Duration
			for range *n {
				cmd := exec.Command(self, "run", "--mode", mode, "-")
				cmd.Stdin = strings.NewReader("print(1)\n")
				cmd.Env = append(os.Environ(), executor.CacheDirEnv+"="+cacheDir, "HERMES_HOME="+tmp)
				t := time.Now()
				if out, err := cmd.Output(); err != nil {
					return fail("run print(1)", fmt.Errorf("%v: %s", err, out))
				}
				whole = append(whole, time.Since(t))
			}
			goal := "warm cache; goal <= 500 ms"
			if mode == "project" {
				goal = "whole `run` process"
			}
			rows = append(rows, row{label + "`run` of print(1), whole process", ms(median(whole)), goal + note})
		}

		calls := 2000
		var per []float64
		for range *n {
			max := calls + 1
			res, err := ex.Execute(ctx, executor.Request{Code: fmt.Sprintf(benchToolScript, calls), Mode: mode, Workdir: tmp, MaxToolCalls: &max})
			if err != nil || res.Status != "success" {
				return fail(mode+" tool round trip", fmt.Errorf("%v %s", err, res.Output))
			}
			v, err := strconv.ParseFloat(strings.TrimSpace(res.Output), 64)
			if err != nil {
				return fail(mode+" tool round trip", err)
			}
			per = append(per, v)
		}
		slices.Sort(per)
		goal := "from inside the script; goal <= 100 µs"
		if mode == "project" {
			goal = "from inside the script, over a " + native.DefaultTransport() + " socket"
		}
		rows = append(rows, row{label + "no-op tool call round trip", fmt.Sprintf("%.1f µs", per[len(per)/2]), goal + note})
	}

	var b bytes.Buffer
	fmt.Fprintf(&b, "hermes-wasm-exec bench (%s/%s, %d CPUs, median of %d)\n\n", goruntime.GOOS, goruntime.GOARCH, goruntime.NumCPU(), *n)
	fmt.Fprintf(&b, "| measurement | value | note |\n|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", r.name, r.value, r.note)
	}
	stdout.Write(b.Bytes())
	return exitOK
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d.Microseconds())/1000) }

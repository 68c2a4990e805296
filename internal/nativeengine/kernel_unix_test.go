//go:build unix

package nativeengine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/internal/engine"
	"github.com/hermes-agent/hermes-wasm-exec/internal/testenv"
	"github.com/hermes-agent/hermes-wasm-exec/native"
)

// fakeKernelEnv selects a behaviour of the test binary acting as a
// kernel's python (see fakeKernelMain). Like fakePythonEnv, it is only
// ever set in the child's environment.
const fakeKernelEnv = "HERMES_FAKE_KERNEL"

func init() {
	if b := os.Getenv(fakeKernelEnv); b != "" {
		os.Exit(fakeKernelMain(b))
	}
}

// fakeKernelMain is the child StartKernel starts as
// `<test binary> -u DIR/_hermes_kernel.py`: it speaks the cell loop's
// protocol directly, so the tests control exactly what reaches the pipes.
func fakeKernelMain(behaviour string) int {
	switch behaviour {
	case "dies-early":
		fmt.Fprintln(os.Stderr, "fake kernel: cannot import hermes_tools: broken install")
		return 5
	case "never-ready":
		fmt.Fprintln(os.Stderr, "fake kernel: starting slowly")
		time.Sleep(60 * time.Second) // a kernel that never gets ready until it is killed: not a wait
		return 0
	case "loop":
	default:
		fmt.Fprintf(os.Stderr, "unknown fake kernel behaviour %q\n", behaviour)
		return 99
	}
	tok := os.Getenv("HERMES_RPC_TOKEN")
	c, r := fakeDial()
	if resp := fakeRoundtrip(c, r, map[string]any{"token": tok, "op": "hello"}); !strings.Contains(resp, `"ok"`) {
		fmt.Fprintln(os.Stderr, "hello:", resp)
		return 90
	}
	// Gaps between writes so the host gets a mark in pieces, in separate
	// reads (the subject of the test, not a wait).
	pause := func() { time.Sleep(15 * time.Millisecond) }
	for {
		var cell struct {
			Op    string `json:"op"`
			Code  string `json:"code"`
			Nonce string `json:"nonce"`
		}
		if err := json.Unmarshal([]byte(fakeRoundtrip(c, r, map[string]any{"token": tok, "op": "next"})), &cell); err != nil {
			fmt.Fprintln(os.Stderr, "next:", err)
			return 91
		}
		if cell.Op != "cell" {
			return 0
		}
		mark := []byte(cell.Nonce)
		switch cell.Code {
		case "split":
			// stdout: text, a false start of a mark, then the mark in
			// three pieces and bytes after it; stderr: the mark a byte at
			// a time.
			os.Stdout.WriteString("a")
			os.Stdout.Write(mark[:12])
			pause()
			os.Stdout.WriteString("fake\n")
			pause()
			os.Stdout.Write(mark[:3])
			pause()
			os.Stdout.Write(mark[3:20])
			pause()
			os.Stdout.Write(append(mark[20:], "after the mark"...))
			os.Stderr.WriteString("err ")
			for i := range mark {
				os.Stderr.Write(mark[i : i+1])
				if i%10 == 0 {
					pause()
				}
			}
		case "exit-9":
			os.Stdout.WriteString("exiting\n")
			return 9
		default:
			os.Stdout.WriteString("ran " + cell.Code + "\n")
			os.Stdout.Write(mark)
			os.Stderr.Write(mark)
		}
	}
}

func fakeKernelEngine(t *testing.T) *Engine {
	exe, err := os.Executable()
	require.NoError(t, err)
	return &Engine{Python: exe, TempDir: t.TempDir(), Grace: 500 * time.Millisecond}
}

func fakeKernelSpec(t *testing.T, behaviour string) engine.KernelSpec {
	return engine.KernelSpec{Env: []string{"PATH=" + os.Getenv("PATH"), fakeKernelEnv + "=" + behaviour}, Workdir: t.TempDir()}
}

func TestKernelFakeMarksAcrossReads(t *testing.T) {
	t.Parallel()
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			t.Parallel()
			e := fakeKernelEngine(t)
			e.Transport = tr
			k, err := e.StartKernel(context.Background(), fakeKernelSpec(t, "loop"))
			require.NoError(t, err)
			tk := &testKernel{t: t, engine: e, k: k}
			for i := 0; i < 2; i++ {
				r := tk.run(context.Background(), "split", nil)
				require.NoError(t, r.err)
				require.Equal(t, engine.Outcome{}, r.outcome)
				require.Equal(t, "a\x1ehermes-end-fake\n", r.stdout.String())
				require.Equal(t, "err ", r.stderr.String())
				r = tk.run(context.Background(), "plain", nil)
				require.NoError(t, r.err)
				require.Equal(t, "ran plain\n", r.stdout.String(), "the bytes after the last mark went to no cell")
				require.Empty(t, r.stderr.String())
			}
			r := tk.run(context.Background(), "exit-9", nil)
			require.NoError(t, r.err)
			require.Equal(t, engine.Outcome{ExitCode: 9}, r.outcome)
			require.Equal(t, "exiting\n", r.stdout.String())
			require.False(t, k.Alive())
			requireEmptyDir(t, e.TempDir)
			require.NoError(t, k.Close())
		})
	}
}

func TestKernelFakeDiesBeforeReady(t *testing.T) {
	t.Parallel()
	e := fakeKernelEngine(t)
	k, err := e.StartKernel(context.Background(), fakeKernelSpec(t, "dies-early"))
	require.Nil(t, k)
	require.Error(t, err)
	require.Contains(t, err.Error(), "exit code 5")
	require.Contains(t, err.Error(), "fake kernel: cannot import hermes_tools: broken install")
	requireEmptyDir(t, e.TempDir)
}

func TestKernelFakeNeverReady(t *testing.T) {
	t.Parallel()
	e := fakeKernelEngine(t)
	// Long enough for a loaded machine to start the fake and let it say
	// so; far less than its 60 s sleep.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	k, err := e.StartKernel(ctx, fakeKernelSpec(t, "never-ready"))
	require.Nil(t, k)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Contains(t, err.Error(), "fake kernel: starting slowly")
	require.Less(t, time.Since(start), 30*time.Second)
	requireEmptyDir(t, e.TempDir)
}

func TestKernelStartErrors(t *testing.T) {
	t.Parallel()
	e := fakeKernelEngine(t)
	e.Python = filepath.Join(t.TempDir(), "no-such-python")
	_, err := e.StartKernel(context.Background(), fakeKernelSpec(t, "loop"))
	require.ErrorContains(t, err, "starting")
	require.ErrorContains(t, err, "no-such-python")
	requireEmptyDir(t, e.TempDir)

	e = fakeKernelEngine(t)
	e.Transport = "carrier-pigeon"
	_, err = e.StartKernel(context.Background(), fakeKernelSpec(t, "loop"))
	require.ErrorContains(t, err, "carrier-pigeon")
	requireEmptyDir(t, e.TempDir)

	e = fakeKernelEngine(t)
	spec := fakeKernelSpec(t, "loop")
	spec.Workdir = filepath.Join(spec.Workdir, "gone")
	_, err = e.StartKernel(context.Background(), spec)
	require.ErrorContains(t, err, "starting")
	requireEmptyDir(t, e.TempDir)

	e.Python = ""
	_, err = e.StartKernel(context.Background(), spec)
	require.ErrorContains(t, err, "no python interpreter")

	e = fakeKernelEngine(t)
	e.TempDir = filepath.Join(t.TempDir(), "missing")
	_, err = e.StartKernel(context.Background(), fakeKernelSpec(t, "loop"))
	require.ErrorContains(t, err, "private dir")
}

// groupGone reports whether no live process is left in process group
// pgid (zombies waiting for a reaper that is not us do not count).
func groupGone(pgid int) bool {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH)
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		// ) S PPID PGRP ...
		f := strings.Fields(string(stat[i+1:]))
		if len(f) > 2 && f[2] == strconv.Itoa(pgid) && f[0] != "Z" && f[0] != "X" {
			return false
		}
	}
	return true
}

// TestKernelRealPythonTimeoutKillsGroup: a busy cell under a 1 s timeout
// ends the kernel; its whole process group goes, a grandchild that
// ignores SIGTERM included, and so does the private dir.
func TestKernelRealPythonTimeoutKillsGroup(t *testing.T) {
	py := testenv.RealPython(t)
	t.Parallel()
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			t.Parallel()
			tk := startRealKernel(t, py, tr)
			requireSuccess(t, tk.exec(context.Background(), "state = 1\n", 0))
			start := time.Now()
			res, err := engine.Execute(context.Background(), tk.k, engine.Request{
				Code: `import os, subprocess
p = subprocess.Popen(["sh", "-c", "trap '' TERM; echo trapped; exec sleep 60"], stdout=subprocess.PIPE)
p.stdout.readline()
print("pids", os.getpid(), p.pid, flush=True)
while True:
    pass
`,
				Mode:    config.ModeProject,
				Timeout: time.Second,
				Tools:   tk.tool,
			})
			elapsed := time.Since(start)
			require.NoError(t, err)
			require.Equal(t, config.StatusTimeout, res.Status, "%+v", res)
			// Killed at the timeout, not left spinning (loose for a loaded
			// machine).
			require.Less(t, elapsed, 30*time.Second)
			var pid, grandchild int
			_, err = fmt.Sscanf(res.Output, "pids %d %d", &pid, &grandchild)
			require.NoError(t, err, res.Output)
			requireGone(t, pid)
			requireGone(t, grandchild)
			require.True(t, groupGone(pid), "the kernel's process group is gone")
			require.False(t, tk.k.Alive())
			requireEmptyDir(t, tk.engine.TempDir)
			_, err = tk.k.Run(context.Background(), &engine.Job{Code: "print(state)\n", Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}, Broker: engine.NewBroker(tk.tool, 0, nil)})
			require.ErrorIs(t, err, engine.ErrKernelClosed)
		})
	}
}

// TestKernelRealPythonBackgroundDiesWithKernel: a process a cell leaves
// running lives on between cells and dies when the kernel is closed.
func TestKernelRealPythonBackgroundDiesWithKernel(t *testing.T) {
	py := testenv.RealPython(t)
	t.Parallel()
	tk := startRealKernel(t, py, native.DefaultTransport())
	res := tk.exec(context.Background(), "import subprocess, os\nbg = subprocess.Popen(['sleep', '60'])\nprint(os.getpid(), bg.pid)\n", 0)
	requireSuccess(t, res)
	var pid, bg int
	_, err := fmt.Sscanf(res.Output, "%d %d", &pid, &bg)
	require.NoError(t, err)
	res = tk.exec(context.Background(), "print(bg.poll())\n", 0)
	requireSuccess(t, res)
	require.Equal(t, "None\n", res.Output, "alive between cells")
	require.False(t, processGone(bg))
	require.NoError(t, tk.k.Close())
	requireGone(t, pid)
	requireGone(t, bg)
	require.True(t, groupGone(pid))
}

// TestKernelNoLeaks must not run in parallel with other tests: it
// compares runtime.NumGoroutine before and after.
func TestKernelNoLeaks(t *testing.T) {
	py := testenv.RealPython(t)
	for _, tr := range transports {
		for _, end := range []string{"close-idle", "close-during-cell", "timeout", "exit"} {
			t.Run(tr+"/"+end, func(t *testing.T) {
				before := settledGoroutines()
				e := &Engine{Python: py, Transport: tr, TempDir: t.TempDir(), Grace: 200 * time.Millisecond}
				k, err := e.StartKernel(context.Background(), engine.KernelSpec{Env: pythonEnv(), Workdir: t.TempDir()})
				require.NoError(t, err)
				tk := &testKernel{t: t, engine: e, k: k}
				res := tk.exec(context.Background(), "import os, threading\nfrom hermes_tools import read_file\nread_file('x')\nthreading.Thread(target=lambda: read_file('y')).start()\nprint(os.getpid())\n", 5)
				requireSuccess(t, res)
				pid, err := strconv.Atoi(strings.TrimSpace(res.Output))
				require.NoError(t, err)
				switch end {
				case "close-idle":
				case "close-during-cell":
					out := newSyncBuffer("go\n")
					go func() {
						<-out.matched
						k.Close()
					}()
					r := tk.run(context.Background(), "import time\nprint('go', flush=True)\ntime.sleep(60)\n", out)
					require.NoError(t, r.err)
					require.Equal(t, -1, r.outcome.ExitCode)
				case "timeout":
					ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
					r := tk.run(ctx, "while True: pass\n", nil)
					cancel()
					require.NoError(t, r.err)
					require.Equal(t, -1, r.outcome.ExitCode)
				case "exit":
					r := tk.run(context.Background(), "raise SystemExit(2)\n", nil)
					require.NoError(t, r.err)
					require.Equal(t, engine.Outcome{ExitCode: 2}, r.outcome)
				}
				require.NoError(t, k.Close())
				requireGone(t, pid)
				require.True(t, groupGone(pid))
				requireEmptyDir(t, e.TempDir)
				deadline := time.Now().Add(30 * time.Second)
				for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
					time.Sleep(10 * time.Millisecond)
				}
				require.LessOrEqual(t, runtime.NumGoroutine(), before, "goroutines left after Close")
			})
		}
	}
}

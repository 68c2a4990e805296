package executor_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/native"
	"github.com/hermes-agent/hermes-wasm-exec/runtime/executor"
)

// idleProjectKernels lists this process's children that run the project
// kernel loop.
func idleProjectKernels() map[string]bool {
	kernels := map[string]bool{}
	self := strconv.Itoa(os.Getpid())
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, st := range stats {
		data, err := os.ReadFile(st)
		if err != nil {
			continue
		}
		rest := string(data[strings.LastIndexByte(string(data), ')')+2:])
		if f := strings.Fields(rest); len(f) < 2 || f[1] != self {
			continue
		}
		dir := filepath.Dir(st)
		cmd, _ := os.ReadFile(filepath.Join(dir, "cmdline"))
		if !strings.Contains(string(cmd), "_hermes_kernel.py") {
			continue
		}
		// Ready: it has connected to its RPC server and asked for a cell.
		fds, _ := filepath.Glob(filepath.Join(dir, "fd", "*"))
		for _, fd := range fds {
			if l, _ := os.Readlink(fd); strings.HasPrefix(l, "socket:") {
				kernels[filepath.Base(dir)] = true
				break
			}
		}
	}
	return kernels
}

// With warm_pool, a new project session's first call runs in the kernel
// the pool started before it, and the pool refills; a session on another
// dir starts its own.
func TestProjectWarmPool(t *testing.T) {
	if native.Resolve(context.Background(), os.Getenv).Path == "" {
		t.Skip("no host python on this machine: the project-mode warm pool needs one (strict mode's pool is tested without)")
	}
	cfg := config.Default()
	cfg.CodeExecution.WarmPool = 1
	ex := executor.New(executor.Options{Config: &cfg})
	defer ex.Close(context.Background())
	ex.StartWarmPool(context.Background())

	pidOf := func(session, workdir string) string {
		res, err := ex.Execute(context.Background(), executor.Request{Mode: config.ModeProject, Session: session, Workdir: workdir,
			Code: "import os\nprint(os.getpid())"})
		require.NoError(t, err)
		require.Equal(t, config.StatusSuccess, res.Status, "%+v", res)
		return strings.TrimSpace(res.Output)
	}
	// A session's first call takes the kernel the pool has ready (a call
	// that comes between a kernel's connect and its arrival in the pool
	// starts its own; the next session then finds it).
	owned := map[string]bool{} // kernels of sessions: not the pool's
	pooled := func() string {
		for pid := range idleProjectKernels() {
			if !owned[pid] {
				return pid
			}
		}
		return ""
	}
	served := false
	for i := 0; i < 5 && !served; i++ {
		var ready string
		require.Eventually(t, func() bool { ready = pooled(); return ready != "" }, 60*time.Second, 20*time.Millisecond,
			"the pool has a kernel ready")
		pid := pidOf("first-"+strconv.Itoa(i), "")
		owned[pid] = true
		served = pid == ready
	}
	require.True(t, served, "no session's first call ran in the pooled kernel")

	// The pool refills.
	var next string
	require.Eventually(t, func() bool { next = pooled(); return next != "" }, 60*time.Second, 20*time.Millisecond, "the pool refills")

	// Another working dir: its own kernel, the pooled one stays.
	other := pidOf("other-dir", t.TempDir())
	assert.NotEqual(t, next, other)
	assert.True(t, idleProjectKernels()[next], "the pooled kernel is still there")
}

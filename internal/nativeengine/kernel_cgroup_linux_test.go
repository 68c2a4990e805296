package nativeengine

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/internal/cgroup"
	"github.com/hermes-agent/hermes-wasm-exec/internal/engine"
	"github.com/hermes-agent/hermes-wasm-exec/internal/testenv"
	"github.com/hermes-agent/hermes-wasm-exec/native"
)

// A kernel's limits hold over all its cells; the hint goes with the cell
// that hit one, not with the cells after it.
func TestKernelProcessLimitHintPerCell(t *testing.T) {
	if st := cgroup.Current(); st.Processes.By == "" {
		t.Skip("process limits are not enforced here: " + st.Processes.Reason)
	}
	py := testenv.RealPython(t)
	limits := engine.ProcessLimits{Processes: 24}
	e := &Engine{Python: py, Transport: native.TransportUnix, TempDir: t.TempDir()}
	k, err := e.StartKernel(context.Background(), engine.KernelSpec{Env: pythonEnv(), Workdir: t.TempDir(), ProcessLimits: limits})
	require.NoError(t, err)
	defer func() {
		require.NoError(t, k.Close())
		requireEmptyDir(t, e.TempDir)
	}()
	cell := func(code string) engine.Result {
		res, err := engine.Execute(context.Background(), k, engine.Request{Code: code, Mode: config.ModeProject, ProcessLimits: limits,
			Tools: func(context.Context, string, json.RawMessage) map[string]any { return nil }})
		require.NoError(t, err)
		return res
	}
	res := cell(`import subprocess
ps = []
try:
    for _ in range(100):
        ps.append(subprocess.Popen(["sleep", "30"]))
finally:
    for p in ps:
        p.kill()
        p.wait()
`)
	require.Equal(t, config.StatusError, res.Status)
	require.Contains(t, res.Error, "BlockingIOError")
	require.Contains(t, res.Hint, "code_execution.process_limit (24 here)")

	res = cell("raise ValueError('another failure')\n")
	require.Equal(t, config.StatusError, res.Status)
	require.Empty(t, res.Hint, "this cell hit no limit")
	res = cell("print('still alive')\n")
	require.Equal(t, config.StatusSuccess, res.Status, res.Output)
}

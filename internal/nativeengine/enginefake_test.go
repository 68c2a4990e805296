package nativeengine

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hermes-agent/hermes-wasm-exec/internal/engine"
)

// fakeRun is one engine run of the test binary as python.
type fakeRun struct {
	engine  *Engine
	job     *engine.Job
	stdout  *syncBuffer
	stderr  *syncBuffer
	outcome engine.Outcome
	err     error
	elapsed time.Duration
}

// newFakeRun prepares a run of the fake python in behaviour. The engine's
// TempDir is a fresh test dir, checked to be empty after the run.
func newFakeRun(t *testing.T, behaviour string, tools engine.ToolFunc) *fakeRun {
	t.Helper()
	if tools == nil {
		tools = (&callRecorder{}).tool
	}
	exe, err := os.Executable()
	require.NoError(t, err)
	stdout, stderr := newSyncBuffer(""), newSyncBuffer("")
	return &fakeRun{
		engine: &Engine{Python: exe, TempDir: t.TempDir(), Grace: 500 * time.Millisecond},
		job: &engine.Job{
			Code:    "print('the script')\n",
			Env:     []string{"PATH=" + os.Getenv("PATH"), fakePythonEnv + "=" + behaviour},
			Workdir: t.TempDir(),
			Stdout:  stdout,
			Stderr:  stderr,
			Broker:  engine.NewBroker(tools, 10, nil),
		},
		stdout: stdout,
		stderr: stderr,
	}
}

func (r *fakeRun) run(t *testing.T, ctx context.Context) {
	t.Helper()
	start := time.Now()
	r.outcome, r.err = r.engine.Run(ctx, r.job)
	r.elapsed = time.Since(start)
	requireEmptyDir(t, r.engine.TempDir)
}

// The fake python's exit code comes through, on every platform.
func TestEngineFakeExitCode(t *testing.T) {
	t.Parallel()
	r := newFakeRun(t, "exit", nil)
	r.run(t, context.Background())
	require.NoError(t, r.err)
	require.Equal(t, engine.Outcome{ExitCode: 7}, r.outcome)
	require.Nil(t, r.job.Broker.Report())
}

package shared

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeEngine plays an interpreter: it writes, calls tools and ends as told.
type fakeEngine struct {
	run func(ctx context.Context, job *Job) (Outcome, error)
}

func (f fakeEngine) Run(ctx context.Context, job *Job) (Outcome, error) { return f.run(ctx, job) }

func execFake(t *testing.T, timeout time.Duration, ctx context.Context, run func(ctx context.Context, job *Job) (Outcome, error)) (Result, error) {
	t.Helper()
	return Execute(ctx, fakeEngine{run}, Request{
		Code: "x = 1", Mode: ModeStrict, Timeout: timeout, MaxToolCalls: 5, SpillDir: t.TempDir(),
		Environ: []string{"PATH=/bin", "API_TOKEN=x", "HERMES_FOO=1"},
		Tools:   func(context.Context, string, json.RawMessage) map[string]any { return map[string]any{"ok": true} },
	})
}

func TestExecuteOutcomes(t *testing.T) {
	ctx := context.Background()

	res, err := execFake(t, time.Minute, ctx, func(ctx context.Context, job *Job) (Outcome, error) {
		require.Equal(t, []string{"PATH=/bin", "PYTHONDONTWRITEBYTECODE=1", "PYTHONIOENCODING=utf-8", "PYTHONUTF8=1"}, job.Env)
		fmt.Fprint(job.Stdout, "hello\n")
		fmt.Fprint(job.Stderr, "a warning\n")
		job.Broker.Serve(ctx, []byte(`{"tool":"read_file","args":{}}`))
		return Outcome{}, nil
	})
	require.NoError(t, err)
	require.Equal(t, StatusSuccess, res.Status)
	require.Equal(t, "hello\n", res.Output, "stderr is shown only when the run fails")
	require.Equal(t, 1, res.ToolCallsMade)
	require.Equal(t, 0, *res.ExitCode)

	res, _ = execFake(t, time.Minute, ctx, func(ctx context.Context, job *Job) (Outcome, error) {
		fmt.Fprint(job.Stdout, "partial")
		fmt.Fprint(job.Stderr, "boom\n")
		return Outcome{ExitCode: 2}, nil
	})
	require.Equal(t, StatusError, res.Status)
	require.Equal(t, "Script exited with code 2", res.Error)
	require.Equal(t, "partial\n--- stderr ---\nboom\n", res.Output)

	res, _ = execFake(t, time.Minute, ctx, func(ctx context.Context, job *Job) (Outcome, error) {
		return Outcome{ExitCode: -1, Crash: "The interpreter crashed: unreachable"}, nil
	})
	require.Equal(t, StatusError, res.Status)
	require.Equal(t, "The interpreter crashed: unreachable", res.Output)

	res, _ = execFake(t, 50*time.Millisecond, ctx, func(ctx context.Context, job *Job) (Outcome, error) {
		fmt.Fprint(job.Stdout, "working")
		<-ctx.Done()
		return Outcome{ExitCode: -1, Crash: "stopped"}, nil
	})
	require.Equal(t, StatusTimeout, res.Status)
	require.Equal(t, "Script timed out after 0.05s and was killed.", res.Error)
	require.Equal(t, "working\n⏰ Script timed out after 0.05s and was killed.", res.Output)
	require.Nil(t, res.ExitCode)

	ictx, cancel := context.WithCancelCause(ctx)
	res, _ = execFake(t, time.Minute, ictx, func(ctx context.Context, job *Job) (Outcome, error) {
		cancel(&InterruptError{Reason: "new message"})
		<-ctx.Done()
		return Outcome{ExitCode: -1, Crash: "stopped"}, nil
	})
	require.Equal(t, StatusInterrupted, res.Status)
	require.Equal(t, "[execution interrupted — new message]", res.Output)

	setup := errors.New("interpreter missing: run make assets")
	res, err = execFake(t, time.Minute, ctx, func(ctx context.Context, job *Job) (Outcome, error) { return Outcome{}, setup })
	require.ErrorIs(t, err, setup)
	require.Equal(t, StatusError, res.Status)
	require.Equal(t, setup.Error(), res.Output)
	out, _ := json.Marshal(res)
	require.True(t, strings.Contains(string(out), `"tool_calls":[]`), "tool_calls is a list, never null: %s", out)
}

func TestExecuteEmptyScript(t *testing.T) {
	ran := false
	res, err := Execute(context.Background(), fakeEngine{func(context.Context, *Job) (Outcome, error) { ran = true; return Outcome{}, nil }},
		Request{Code: " \n\t\n", Mode: ModeStrict})
	require.NoError(t, err)
	require.False(t, ran, "an empty script never starts an interpreter")
	require.Equal(t, StatusError, res.Status)
	require.Contains(t, res.Error, "The script is empty")
}

func TestExecuteLogsDroppedHermesVars(t *testing.T) {
	var lines []string
	_, err := Execute(context.Background(), fakeEngine{func(context.Context, *Job) (Outcome, error) { return Outcome{}, nil }},
		Request{Code: "pass", Mode: ModeStrict, Environ: []string{"HERMES_B=1", "HERMES_A=2", "HERMES_HOME=/h", "HERMES_API_KEY=k"},
			Logf: func(f string, a ...any) { lines = append(lines, fmt.Sprintf(f, a...)) }})
	require.NoError(t, err)
	require.Len(t, lines, 1)
	require.True(t, strings.HasPrefix(lines[0], "execute_code: dropped 2 non-allowlisted HERMES_* var(s): HERMES_A, HERMES_B"), lines[0])
}

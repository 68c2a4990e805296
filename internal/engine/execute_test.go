package engine

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hermes-agent/hermes-wasm-exec/config"
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
		Code: "x = 1", Mode: config.ModeStrict, Timeout: timeout, MaxToolCalls: 5, SpillDir: t.TempDir(),
		Env:   ChildEnv([]string{"PATH=/bin", "API_TOKEN=x", "HERMES_FOO=1"}, EnvOptions{}, nil, nil),
		Tools: func(context.Context, string, json.RawMessage) map[string]any { return map[string]any{"ok": true} },
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
	require.Equal(t, config.StatusSuccess, res.Status)
	require.Equal(t, "hello\n", res.Output, "stderr is shown only when the run fails")
	require.Equal(t, 1, res.ToolCallsMade)
	require.Equal(t, 0, *res.ExitCode)

	res, _ = execFake(t, time.Minute, ctx, func(ctx context.Context, job *Job) (Outcome, error) {
		fmt.Fprint(job.Stdout, "partial")
		fmt.Fprint(job.Stderr, "boom\n")
		return Outcome{ExitCode: 2}, nil
	})
	require.Equal(t, config.StatusError, res.Status)
	require.Equal(t, "Script exited with code 2", res.Error)
	require.Equal(t, "partial\n--- stderr ---\nboom\n", res.Output)

	res, _ = execFake(t, time.Minute, ctx, func(ctx context.Context, job *Job) (Outcome, error) {
		return Outcome{ExitCode: -1, Crash: "The interpreter crashed: unreachable"}, nil
	})
	require.Equal(t, config.StatusError, res.Status)
	require.Equal(t, "The interpreter crashed: unreachable", res.Output)

	res, _ = execFake(t, 50*time.Millisecond, ctx, func(ctx context.Context, job *Job) (Outcome, error) {
		fmt.Fprint(job.Stdout, "working")
		<-ctx.Done()
		return Outcome{ExitCode: -1, Crash: "stopped"}, nil
	})
	require.Equal(t, config.StatusTimeout, res.Status)
	require.Equal(t, "Script timed out after 0.05s and was killed.", res.Error)
	require.Equal(t, "working\n\n⏰ Script timed out after 0.05s and was killed.", res.Output, "Hermes: output + \"\\n\\n⏰ \" + message")
	require.Equal(t, -1, *res.ExitCode)

	ictx, cancel := context.WithCancelCause(ctx)
	res, _ = execFake(t, time.Minute, ictx, func(ctx context.Context, job *Job) (Outcome, error) {
		cancel(&InterruptError{Reason: "new message"})
		<-ctx.Done()
		return Outcome{ExitCode: -1, Crash: "stopped"}, nil
	})
	require.Equal(t, config.StatusInterrupted, res.Status)
	require.Equal(t, "[execution interrupted — new message]", res.Output)
	require.Equal(t, "Execution interrupted: new message", res.Error)
	require.Equal(t, -1, *res.ExitCode)

	setup := errors.New("interpreter missing: restore pyodide-assets/dist")
	res, err = execFake(t, time.Minute, ctx, func(ctx context.Context, job *Job) (Outcome, error) { return Outcome{}, setup })
	require.ErrorIs(t, err, setup)
	require.Equal(t, config.StatusError, res.Status)
	require.Equal(t, setup.Error(), res.Output)
	out, _ := json.Marshal(res)
	require.True(t, strings.Contains(string(out), `"tool_calls":[]`), "tool_calls is a list, never null: %s", out)
}

func TestExecuteEmptyScript(t *testing.T) {
	ran := false
	res, err := Execute(context.Background(), fakeEngine{func(context.Context, *Job) (Outcome, error) { ran = true; return Outcome{}, nil }},
		Request{Code: " \n\t\n", Mode: config.ModeStrict})
	require.NoError(t, err)
	require.False(t, ran, "an empty script never starts an interpreter")
	require.Equal(t, config.StatusError, res.Status)
	require.Equal(t, NoCodeMessage, res.Error)
}

// TestExecuteLogsSpillFailure: a truncated stdout that cannot be saved is a
// warning event on the request's Logger, and the result says the output is
// cut without a path.
func TestExecuteLogsSpillFailure(t *testing.T) {
	blocker := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(blocker, nil, 0o600))
	spill := filepath.Join(blocker, "exec")
	var logged bytes.Buffer
	res, err := Execute(context.Background(), fakeEngine{func(_ context.Context, job *Job) (Outcome, error) {
		_, err := job.Stdout.Write(bytes.Repeat([]byte("x"), 100_000))
		return Outcome{}, err
	}}, Request{Code: "pass", Mode: config.ModeStrict, SpillDir: spill,
		Logger: slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		}}))})
	require.NoError(t, err)
	require.True(t, res.StdoutTruncated)
	require.Empty(t, res.StdoutSpillPath)
	require.Equal(t, truncatedWarning(""), res.Warning)
	require.True(t, strings.HasPrefix(logged.String(), `level=WARN msg="stdout spill failed" dir=`+spill+" error="), logged.String())
	require.Equal(t, 1, strings.Count(logged.String(), "\n"), logged.String())

	// Without a Logger nothing is logged, and nothing fails.
	_, err = Execute(context.Background(), fakeEngine{func(_ context.Context, job *Job) (Outcome, error) {
		_, err := job.Stdout.Write(bytes.Repeat([]byte("x"), 100_000))
		return Outcome{}, err
	}}, Request{Code: "pass", Mode: config.ModeStrict, SpillDir: spill})
	require.NoError(t, err)
}

// fakeKernel is a fakeEngine that is a Kernel: alive tells whether it
// survived its cell.
type fakeKernel struct {
	fakeEngine
	alive bool
}

func (k *fakeKernel) Alive() bool  { return k.alive }
func (k *fakeKernel) Close() error { k.alive = false; return nil }

// TestExecuteResultTexts asserts the texts of timeouts, interrupts, stdout
// truncation and the stderr cut verbatim: they are Hermes's (see
// execute.go), in a one-shot run and in a session kernel.
func TestExecuteResultTexts(t *testing.T) {
	ctx := context.Background()
	req := func(timeout time.Duration) Request {
		return Request{Code: "x", Mode: config.ModeProject, Timeout: timeout, SpillDir: filepath.Join(t.TempDir(), "exec"),
			Tools: func(context.Context, string, json.RawMessage) map[string]any { return map[string]any{} }}
	}
	hang := func(stdout, stderr string) func(ctx context.Context, job *Job) (Outcome, error) {
		return func(ctx context.Context, job *Job) (Outcome, error) {
			fmt.Fprint(job.Stdout, stdout)
			fmt.Fprint(job.Stderr, stderr)
			<-ctx.Done()
			return Outcome{ExitCode: -1, Crash: "stopped"}, nil
		}
	}

	t.Run("timeout", func(t *testing.T) {
		res, err := Execute(ctx, fakeEngine{hang("", "")}, req(50*time.Millisecond))
		require.NoError(t, err)
		require.Equal(t, "⏰ Script timed out after 0.05s and was killed.", res.Output, "no output: the line alone")
		require.Equal(t, -1, *res.ExitCode)
		res, _ = Execute(ctx, fakeEngine{hang("line 1\n", "")}, req(50*time.Millisecond))
		require.Equal(t, "line 1\n\n\n⏰ Script timed out after 0.05s and was killed.", res.Output, "Hermes appends \"\\n\\n⏰ \" to the output as it is")
		// stderr printed before the timeout is shown (it tells what hung).
		res, _ = Execute(ctx, fakeEngine{hang("out", "still waiting\n")}, req(50*time.Millisecond))
		require.Equal(t, "out\n--- stderr ---\nstill waiting\n\n\n⏰ Script timed out after 0.05s and was killed.", res.Output)
	})

	t.Run("kernel timeout", func(t *testing.T) {
		k := &fakeKernel{alive: true}
		k.run = func(ctx context.Context, job *Job) (Outcome, error) {
			fmt.Fprint(job.Stdout, "started\n")
			<-ctx.Done()
			k.alive = false // killed, as a Kernel is when ctx ends during its cell
			return Outcome{ExitCode: -1, Crash: "the interpreter was stopped"}, nil
		}
		res, err := Execute(ctx, k, req(time.Second))
		require.NoError(t, err)
		require.Equal(t, config.StatusTimeout, res.Status)
		require.Equal(t, "Cell timed out after 1s; the session kernel was killed and its state was lost. The next execute_code call starts a fresh kernel.", res.Error)
		require.Equal(t, "started\n\n\n⏰ Cell timed out after 1s; the session kernel was killed and its state was lost. The next execute_code call starts a fresh kernel.", res.Output)
		require.Equal(t, -1, *res.ExitCode)

		// A kernel that is still alive (its call never started) was not killed.
		alive := &fakeKernel{alive: true}
		alive.run = hang("", "")
		res, _ = Execute(ctx, alive, req(50*time.Millisecond))
		require.Equal(t, "Script timed out after 0.05s and was killed.", res.Error)
	})

	t.Run("interrupt", func(t *testing.T) {
		for _, tc := range []struct {
			reason, stdout, output string
		}{
			{"", "", "[execution interrupted — user sent a new message]"},
			{"the user pressed stop", "partial", "partial\n[execution interrupted — the user pressed stop]"},
			{"", "line\n", "line\n\n[execution interrupted — user sent a new message]"},
		} {
			for _, kernel := range []bool{false, true} {
				ictx, cancel := context.WithCancelCause(ctx)
				run := func(ctx context.Context, job *Job) (Outcome, error) {
					fmt.Fprint(job.Stdout, tc.stdout)
					cancel(&InterruptError{Reason: tc.reason})
					<-ctx.Done()
					return Outcome{ExitCode: -1, Crash: "stopped"}, nil
				}
				var eng Engine = fakeEngine{run}
				wantErr := "Execution interrupted: " + cmp.Or(tc.reason, DefaultInterruptReason)
				if kernel {
					eng = &fakeKernel{fakeEngine: fakeEngine{func(ctx context.Context, job *Job) (Outcome, error) {
						o, err := run(ctx, job)
						eng.(*fakeKernel).alive = false
						return o, err
					}}, alive: true}
					wantErr = "Interrupted; the session kernel was killed and its state was lost."
				}
				res, err := Execute(ictx, eng, req(time.Minute))
				require.NoError(t, err)
				require.Equal(t, config.StatusInterrupted, res.Status)
				require.Equal(t, tc.output, res.Output, "kernel=%v", kernel)
				require.Equal(t, wantErr, res.Error)
				require.Equal(t, -1, *res.ExitCode)
			}
		}
	})

	t.Run("truncation warning", func(t *testing.T) {
		print := func(n int) func(ctx context.Context, job *Job) (Outcome, error) {
			return func(ctx context.Context, job *Job) (Outcome, error) {
				job.Stdout.Write([]byte(strings.Repeat("x", n)))
				return Outcome{}, nil
			}
		}
		r := req(time.Minute)
		res, err := Execute(ctx, fakeEngine{print(60_000)}, r)
		require.NoError(t, err)
		require.True(t, res.StdoutTruncated)
		require.Equal(t, filepath.Join(r.SpillDir, "stdout-"+sha12(strings.Repeat("x", 60_000))+".txt"), res.StdoutSpillPath)
		literal := `"` + res.StdoutSpillPath + `"` // a Python literal of the path
		if runtime.GOOS == "windows" {
			literal = `r"` + res.StdoutSpillPath + `"`
		}
		require.Equal(t, "execute_code stdout was truncated (head/tail shown); the script did run. FULL output saved to "+res.StdoutSpillPath+
			` — page it with read_file(path=`+literal+`, offset=...) instead of re-running.`, res.Warning)
		// The model is told to call read_file: a Windows path is a raw
		// string there, since "C:\Users" is a syntax error in Python.
		require.Contains(t, truncatedWarning(`C:\Users\me\.hermes\cache\exec\stdout-1.txt`),
			`FULL output saved to C:\Users\me\.hermes\cache\exec\stdout-1.txt — page it with read_file(path=r"C:\Users\me\.hermes\cache\exec\stdout-1.txt", offset=...)`)

		r.SpillDir = "" // nowhere to save it
		res, _ = Execute(ctx, fakeEngine{print(60_000)}, r)
		require.Empty(t, res.StdoutSpillPath)
		require.Equal(t, "execute_code stdout was truncated; the script did run, but only the captured head/tail output is included. Re-run only with narrower output if the omitted data is required.", res.Warning)

		res, _ = Execute(ctx, fakeEngine{print(50_000)}, req(time.Minute))
		require.False(t, res.StdoutTruncated)
		require.Empty(t, res.Warning)
	})

	t.Run("stderr cut", func(t *testing.T) {
		// Hermes keeps the head of stderr only (10,000 bytes).
		res, _ := Execute(ctx, fakeEngine{func(ctx context.Context, job *Job) (Outcome, error) {
			fmt.Fprint(job.Stderr, "first error\n"+strings.Repeat("e", 14_000)+"LAST")
			return Outcome{ExitCode: 1}, nil
		}}, req(time.Minute))
		stderr := "first error\n" + strings.Repeat("e", 10_000-len("first error\n"))
		require.Equal(t, "--- stderr ---\n"+stderr+"\n\n... [OUTPUT TRUNCATED - 4,016 bytes omitted out of 14,016 total] ...", res.Output)
		require.Equal(t, "Script exited with code 1", res.Error)
		require.Equal(t, 1, *res.ExitCode)
	})
}

// TestExecuteToolSet: a one-shot run's interpreter learns its tool set from
// HERMES_RPC_TOOLS (unset for all seven), and the broker enforces it.
func TestExecuteToolSet(t *testing.T) {
	for _, tc := range []struct {
		enabled []string
		env     string
	}{
		{nil, ""},
		{append([]string{"vision_analyze"}, toolNames...), ""},
		{[]string{"terminal", "browser_navigate", "read_file"}, "HERMES_RPC_TOOLS=read_file,terminal"},
		{[]string{"delegate_task"}, "HERMES_RPC_TOOLS="},
	} {
		res, err := Execute(context.Background(), fakeEngine{func(ctx context.Context, job *Job) (Outcome, error) {
			var got []string
			for _, kv := range job.Env {
				if strings.HasPrefix(kv, toolsEnv+"=") {
					got = append(got, kv)
				}
			}
			if tc.env == "" {
				require.Empty(t, got)
			} else {
				require.Equal(t, []string{tc.env}, got)
			}
			fmt.Fprintln(job.Stdout, job.Broker.Call(ctx, "terminal", nil)["error"])
			return Outcome{}, nil
		}}, Request{Code: "x", Mode: config.ModeStrict, Enabled: tc.enabled, MaxToolCalls: 1,
			Env:   ChildEnv([]string{toolsEnv + "=web_search"}, EnvOptions{}, nil, tc.enabled), // the host's own value never reaches the script
			Tools: func(context.Context, string, json.RawMessage) map[string]any { return map[string]any{} }})
		require.NoError(t, err)
		if slices.Contains(ToolSet(tc.enabled), "terminal") {
			require.Equal(t, "<nil>\n", res.Output)
		} else {
			require.Equal(t, "Tool 'terminal' is not available in execute_code. Available: "+cmp.Or(strings.Join(ToolSet(tc.enabled), ", "), "none")+"\n", res.Output)
		}
	}
}

func sha12(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:12]
}

package executor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/runtime/executor"
)

// The examples keep their state in temp dirs they remove. The compilation
// cache is $HERMES_WASM_CACHE_DIR when set (make test sets it), else under
// the HermesHome given, so a bare `go test` compiles the interpreter once
// per example.

// New needs no file: the configuration is a plain struct, and every
// Options field is optional.
func ExampleNew() {
	home, _ := os.MkdirTemp("", "hermes-home-")
	defer os.RemoveAll(home)

	cfg := config.Default() // every default filled in; no config.yaml is read
	cfg.CodeExecution.Mode = config.ModeStrict
	cfg.CodeExecution.Timeout = 30
	cfg.CodeExecution.MaxToolCalls = 10

	ex := executor.New(executor.Options{Config: &cfg, HermesHome: home})
	defer ex.Close(context.Background())

	res, err := ex.Execute(context.Background(), executor.Request{Code: "print(6 * 7)", Workdir: home})
	fmt.Println(err, res.Mode, res.Status)
	fmt.Print(res.Output)
	// Output:
	// <nil> strict success
	// 42
}

// A session kernel keeps the interpreter alive between calls: globals,
// imports and loaded data persist.
func ExampleExecutor_Execute_session() {
	home, _ := os.MkdirTemp("", "hermes-home-")
	defer os.RemoveAll(home)
	ex := executor.New(executor.Options{HermesHome: home})
	defer ex.Close(context.Background())
	ctx := context.Background()

	for _, code := range []string{"x = 1", "print(x + 1)"} {
		res, _ := ex.Execute(ctx, executor.Request{Code: code, Mode: "strict", Workdir: home, Session: "s1"})
		fmt.Printf("%s reused=%v execution_count=%d output=%q\n",
			res.Status, res.Kernel.Reused, res.Kernel.ExecutionCount, res.Output)
	}
	ex.CloseSession(ctx, "s1") // the kernel ends; the next call of s1 starts fresh
	// Output:
	// success reused=false execution_count=1 output=""
	// success reused=true execution_count=2 output="2\n"
}

// An embedder replaces web_search with its own handler: same arguments,
// same result shape, and the same whitelist, budget and log as the
// built-in tool. Request.Tools restricts the enabled set, as Hermes's
// enabled_tools: names that are not script-callable tools are dropped, and
// only the enabled tools can be imported from hermes_tools.
func ExampleToolHandler() {
	home, _ := os.MkdirTemp("", "hermes-home-")
	defer os.RemoveAll(home)

	search := func(ctx context.Context, args json.RawMessage) map[string]any {
		var a struct {
			Query string `json:"query"`
			Limit int    `json:"limit"`
		}
		if err := json.Unmarshal(args, &a); err != nil {
			return map[string]any{"success": false, "error": err.Error()}
		}
		return map[string]any{"success": true, "data": map[string]any{"web": []any{
			map[string]any{"title": "About " + a.Query, "url": "https://example.com/1", "description": "a fixed result", "position": 1},
		}}}
	}
	ex := executor.New(executor.Options{
		HermesHome: home,
		Tools:      map[string]executor.ToolHandler{"web_search": search},
	})
	defer ex.Close(context.Background())

	res, err := ex.Execute(context.Background(), executor.Request{
		Mode:    "strict",
		Workdir: home,
		Tools:   []string{"web_search", "vision_analyze"},
		Code: `from hermes_tools import web_search
r = web_search("otters", limit=1)
print(r["data"]["web"][0]["title"])
try:
    from hermes_tools import read_file
except ImportError as e:
    print(e)
`,
	})
	fmt.Println(err, res.Status, res.ToolCallsMade)
	fmt.Print(res.Output)
	// Output:
	// <nil> success 1
	// About otters
	// cannot import name 'read_file' from 'hermes_tools' (/hermes_tools.py)
}

// An Approver decides what needs approval (docs/behaviour.md §8): in a gateway session
// the whole script, before it runs. This one refuses scripts that run
// shell commands.
func ExampleApproverFunc() {
	home, _ := os.MkdirTemp("", "hermes-home-")
	defer os.RemoveAll(home)

	policy := executor.ApproverFunc(func(ctx context.Context, req executor.ApprovalRequest) (executor.Decision, error) {
		if req.Type == config.ApproveScript && strings.Contains(req.Code, "terminal") {
			return executor.Decision{Approved: false}, nil
		}
		return executor.Decision{Approved: true, Scope: config.ScopeOnce}, nil
	})
	ex := executor.New(executor.Options{HermesHome: home, Approver: policy})
	defer ex.Close(context.Background())
	ctx := context.Background()

	for _, code := range []string{
		"from hermes_tools import terminal\nterminal('rm -rf build')",
		"print('hello from the gateway')",
	} {
		res, _ := ex.Execute(ctx, executor.Request{Code: code, Mode: "strict", Workdir: home, Kind: config.KindGateway})
		fmt.Printf("%s blocked=%v output=%q\n", res.Status, res.Blocked, res.Output)
	}
	// Output:
	// error blocked=true output="Script blocked: the gateway session's approval was denied, so the script did not run. Do not resubmit it unchanged; ask the user how to proceed."
	// success blocked=false output="hello from the gateway\n"
}

// Cancelling the context interrupts a running call; a *executor.InterruptError
// cause gives the reason the agent sees.
func ExampleExecutor_Execute_interrupt() {
	home, _ := os.MkdirTemp("", "hermes-home-")
	defer os.RemoveAll(home)
	ex := executor.New(executor.Options{HermesHome: home})
	defer ex.Close(context.Background())

	ctx, cancel := context.WithCancelCause(context.Background())
	stop := time.AfterFunc(300*time.Millisecond, func() {
		cancel(&executor.InterruptError{Reason: "the user pressed stop"})
	})
	defer stop.Stop()

	res, err := ex.Execute(ctx, executor.Request{Code: "import time\ntime.sleep(60)", Mode: "strict", Workdir: home})
	lines := strings.Split(res.Output, "\n")
	fmt.Println(err, res.Status)
	fmt.Println(res.Error)
	fmt.Println(lines[len(lines)-1])
	// Output:
	// <nil> interrupted
	// Execution interrupted: the user pressed stop
	// [execution interrupted — the user pressed stop]
}

// Request.Output follows a script's output as it prints it (here each line
// arrives before the script goes on); the result has it all too.
func ExampleRequest_output() {
	home, _ := os.MkdirTemp("", "hermes-home-")
	defer os.RemoveAll(home)
	ex := executor.New(executor.Options{HermesHome: home})
	defer ex.Close(context.Background())

	var live strings.Builder // Output is called from one goroutine at a time
	arrived := make(chan struct{}, 1)
	res, err := ex.Execute(context.Background(), executor.Request{
		Mode: "strict", Workdir: home,
		Code: "from hermes_tools import web_search\nfor i in range(3):\n    print('step', i)\n    web_search('wait')\n",
		Output: func(stream string, chunk []byte) {
			live.Write(chunk) // stream is "stdout" or "stderr"
			select {
			case arrived <- struct{}{}:
			default:
			}
		},
		// The script waits in web_search until its line has arrived.
		ToolHandlers: map[string]executor.ToolHandler{"web_search": func(ctx context.Context, _ json.RawMessage) map[string]any {
			select {
			case <-arrived:
			case <-ctx.Done():
			}
			return map[string]any{}
		}},
	})
	fmt.Println(err, res.Status)
	fmt.Print(live.String())
	fmt.Println(live.String() == res.Output)
	// Output:
	// <nil> success
	// step 0
	// step 1
	// step 2
	// true
}

// A skill that declares required_environment_variables registers them: they
// then reach scripts (and terminal commands) like terminal.env_passthrough.
// Credentials the host manages are refused, with a warning event.
func ExampleExecutor_RegisterSkillEnv() {
	home, _ := os.MkdirTemp("", "hermes-home-")
	defer os.RemoveAll(home)

	// Log warnings as text, without the time, to show the refusal.
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		Level: slog.LevelWarn,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
	ex := executor.New(executor.Options{
		HermesHome: home,
		Logger:     logger,
		Environ:    []string{"PATH=/usr/bin", "NOTION_API_TOKEN=secret-for-the-skill", "OPENAI_API_KEY=sk-host"},
	})
	defer ex.Close(context.Background())

	refused := ex.RegisterSkillEnv("NOTION_API_TOKEN", "OPENAI_API_KEY")
	fmt.Println("refused:", refused)

	res, _ := ex.Execute(context.Background(), executor.Request{Mode: "strict", Workdir: home, Code: `import os
print(os.environ.get("NOTION_API_TOKEN"), os.environ.get("OPENAI_API_KEY"))`})
	fmt.Print(res.Output)
	// Output:
	// level=WARN msg="skill environment variable refused" names=[OPENAI_API_KEY] reason="host-managed credential"
	// refused: [OPENAI_API_KEY]
	// secret-for-the-skill None
}

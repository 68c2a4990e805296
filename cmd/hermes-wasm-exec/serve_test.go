package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	goruntime "runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/internal/engine"
	"github.com/hermes-agent/hermes-wasm-exec/internal/landlock"
	"github.com/hermes-agent/hermes-wasm-exec/runtime/executor"
)

type kernelInfo = engine.KernelInfo

// rpcTimeout bounds the wait for any one response in these tests.
const rpcTimeout = 3 * time.Minute

// maxRPCLine is serve's limit for one line once a client needs no
// authentication or has authenticated (internal/serve).
const maxRPCLine = 64 << 20

// testMsg is any message the server sends.
type testMsg struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// approveParams are the params of the server's approve requests.
type approveParams struct {
	Type      string          `json:"type"`
	Session   string          `json:"session"`
	Code      string          `json:"code"`
	Command   string          `json:"command"`
	Reason    string          `json:"reason"`
	RequestID json.RawMessage `json:"request_id"`
	// ID is the approve request's own id (not a param).
	ID json.RawMessage `json:"-"`
}

// toolCallParams are the params of the server's tool_call requests.
type toolCallParams struct {
	Tool      string          `json:"tool"`
	Args      json.RawMessage `json:"args"`
	Session   string          `json:"session"`
	RequestID json.RawMessage `json:"request_id"`
	// ID is the tool_call request's own id (not a param).
	ID json.RawMessage `json:"-"`
}

// serveClient speaks the serve protocol over one stream: it matches
// responses to requests by id, and answers the server's approve requests
// with answer and its tool_call requests with tool (nil: they are only
// recorded).
type serveClient struct {
	wmu sync.Mutex
	w   io.Writer

	mu      sync.Mutex
	next    int
	waiting map[string]chan testMsg
	bad     []string // lines that were not one JSON object
	answer  func(approveParams) map[string]any
	tool    func(toolCallParams) map[string]any

	other      chan testMsg // responses nobody waits for (id null, ...)
	outputs    chan testMsg // output notifications, in arrival order
	asks       chan approveParams
	asked      atomic.Int32
	toolCalls  chan toolCallParams
	toolCalled atomic.Int32
	closed     chan struct{} // the server's output ended
}

func newServeClient(r io.Reader, w io.Writer) *serveClient {
	c := &serveClient{
		w: w, waiting: map[string]chan testMsg{},
		other: make(chan testMsg, 100), outputs: make(chan testMsg, 1000), asks: make(chan approveParams, 100),
		toolCalls: make(chan toolCallParams, 100), closed: make(chan struct{}),
	}
	go c.read(r)
	return c
}

// respond answers the server's request id with resp (a map holding
// "result" or "error"), unless resp is nil.
func (c *serveClient) respond(id json.RawMessage, resp map[string]any) {
	if resp == nil {
		return
	}
	resp["jsonrpc"] = "2.0"
	resp["id"] = id
	b, _ := json.Marshal(resp)
	c.send(string(b))
}

func (c *serveClient) read(r io.Reader) {
	defer close(c.closed)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 80<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var m testMsg
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &m) != nil || m.JSONRPC != "2.0" {
			c.mu.Lock()
			c.bad = append(c.bad, string(line))
			c.mu.Unlock()
			continue
		}
		if m.Method == "output" {
			// Before any later line (the call's response) is handed on.
			c.outputs <- m
			continue
		}
		if m.Method == "tool_call" {
			var p toolCallParams
			_ = json.Unmarshal(m.Params, &p)
			p.ID = m.ID
			c.toolCalled.Add(1)
			c.toolCalls <- p
			c.mu.Lock()
			tool := c.tool
			c.mu.Unlock()
			if tool != nil {
				go func() { c.respond(m.ID, tool(p)) }()
			}
			continue
		}
		if m.Method != "" {
			var p approveParams
			_ = json.Unmarshal(m.Params, &p)
			p.ID = m.ID
			c.asked.Add(1)
			c.asks <- p
			c.mu.Lock()
			answer := c.answer
			c.mu.Unlock()
			if m.Method == "approve" && answer != nil {
				go func() { c.respond(m.ID, answer(p)) }()
			}
			continue
		}
		c.mu.Lock()
		ch := c.waiting[string(m.ID)]
		delete(c.waiting, string(m.ID))
		c.mu.Unlock()
		if ch != nil {
			ch <- m
		} else {
			c.other <- m
		}
	}
}

func (c *serveClient) setAnswer(f func(approveParams) map[string]any) {
	c.mu.Lock()
	c.answer = f
	c.mu.Unlock()
}

func (c *serveClient) setTool(f func(toolCallParams) map[string]any) {
	c.mu.Lock()
	c.tool = f
	c.mu.Unlock()
}

// nextToolCall waits for the server's next tool_call request.
func (c *serveClient) nextToolCall(t *testing.T) toolCallParams {
	t.Helper()
	select {
	case p := <-c.toolCalls:
		return p
	case <-time.After(rpcTimeout):
		t.Fatal("no tool_call request")
	}
	return toolCallParams{}
}

// send writes one raw line.
func (c *serveClient) send(line string) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, _ = io.WriteString(c.w, line+"\n")
}

// expect registers a wait for the response with the JSON id.
func (c *serveClient) expect(id string) <-chan testMsg {
	ch := make(chan testMsg, 1)
	c.mu.Lock()
	c.waiting[id] = ch
	c.mu.Unlock()
	return ch
}

// start sends a request and returns where its response will arrive.
func (c *serveClient) start(method string, params any) <-chan testMsg {
	c.mu.Lock()
	c.next++
	id := strconv.Itoa(c.next)
	c.mu.Unlock()
	ch := c.expect(id)
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(id), "method": method, "params": params})
	c.send(string(b))
	return ch
}

// rawCall sends a raw line carrying the JSON id and waits for its response.
func (c *serveClient) rawCall(t *testing.T, id, line string) testMsg {
	t.Helper()
	ch := c.expect(id)
	c.send(line)
	return wait(t, ch)
}

func wait(t *testing.T, ch <-chan testMsg) testMsg {
	t.Helper()
	select {
	case m := <-ch:
		return m
	case <-time.After(rpcTimeout):
		t.Fatal("no response")
	}
	return testMsg{}
}

func (c *serveClient) call(t *testing.T, method string, params any) testMsg {
	t.Helper()
	return wait(t, c.start(method, params))
}

// exec runs execute and returns its result.
func (c *serveClient) exec(t *testing.T, params map[string]any) result {
	t.Helper()
	return execResult(t, c.call(t, "execute", params))
}

func execResult(t *testing.T, m testMsg) result {
	t.Helper()
	require.Nil(t, m.Error, "execute failed: %+v", m.Error)
	var res result
	require.NoError(t, json.Unmarshal(m.Result, &res), string(m.Result))
	return res
}

// nextAsk waits for the server's next approve request.
func (c *serveClient) nextAsk(t *testing.T) approveParams {
	t.Helper()
	select {
	case p := <-c.asks:
		return p
	case <-time.After(rpcTimeout):
		t.Fatal("no approve request")
	}
	return approveParams{}
}

func (c *serveClient) badLines() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.bad...)
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// serveEnv is an isolated environment for one serve process: its own
// HERMES_HOME, TMPDIR (checked to be empty once the server has exited),
// working dir and config file.
type serveEnv struct {
	t                        *testing.T
	home, tmp, workdir, conf string
	env                      []string
}

// defaultServeConfig keeps test servers light: no warm pool.
const defaultServeConfig = "code_execution:\n  warm_pool: 0\n"

func newServeEnv(t *testing.T, configYAML string) *serveEnv {
	t.Helper()
	e := &serveEnv{t: t, home: t.TempDir(), tmp: t.TempDir(), workdir: t.TempDir()}
	e.conf = filepath.Join(e.home, "test-config.yaml")
	require.NoError(t, os.WriteFile(e.conf, []byte(configYAML), 0o600))
	e.env = []string{"HERMES_HOME=" + e.home, "TMPDIR=" + e.tmp, "HERMES_CLI_MAIN=1", "HERMES_SERVE_TOKEN="}
	return e
}

// serveProc is a `serve` child process.
type serveProc struct {
	*serveClient
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *syncBuffer
	exited chan struct{}
	code   int
	killed bool // by the test (kill): no clean exit to check
}

// kill ends the process with SIGKILL, as a crash or an OOM kill would,
// and waits for it. What it leaves in TMPDIR is removed: a killed process
// cannot clean up.
func (p *serveProc) kill() {
	p.killed = true
	p.cmd.Process.Kill()
	<-p.exited
}

// start runs `serve --config CONF args...` with stdin/stdout as its
// transport. At the end of the test stdin is closed, the process must exit
// 0, and TMPDIR must be empty.
func (e *serveEnv) start(args ...string) *serveProc {
	t := e.t
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"serve", "--config", e.conf}, args...)...)
	cmd.Env = append(os.Environ(), e.env...)
	cmd.Dir = e.workdir
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	p := &serveProc{t: t, cmd: cmd, stdin: stdin, stderr: &syncBuffer{}, exited: make(chan struct{})}
	cmd.Stderr = p.stderr
	require.NoError(t, cmd.Start())
	p.serveClient = newServeClient(stdout, stdin)
	go func() {
		<-p.serveClient.closed
		err := cmd.Wait()
		p.code = cmd.ProcessState.ExitCode()
		if err != nil && p.code == 0 {
			p.code = -1
		}
		close(p.exited)
	}()
	t.Cleanup(func() {
		stdin.Close()
		if p.killed {
			os.RemoveAll(e.tmp)
			return
		}
		code := p.waitExit(60 * time.Second)
		require.Equal(t, 0, code, "serve must exit 0 when stdin closes; stderr:\n%s", p.stderr.String())
		require.Empty(t, p.badLines(), "every line on stdout must be one JSON-RPC object")
		left, _ := os.ReadDir(e.tmp)
		var names []string
		for _, d := range left {
			names = append(names, d.Name())
		}
		require.Empty(t, names, "temp dirs left behind")
	})
	return p
}

// waitExit waits for the process to exit (killing it after timeout) and
// returns its exit code.
func (p *serveProc) waitExit(timeout time.Duration) int {
	select {
	case <-p.exited:
	case <-time.After(timeout):
		p.cmd.Process.Kill()
		<-p.exited
		return -9
	}
	return p.code
}

func TestServeFraming(t *testing.T) {
	t.Parallel()
	e := newServeEnv(t, defaultServeConfig)
	p := e.start()

	nullError := func(line string, code int, msg string) {
		t.Helper()
		p.send(line)
		select {
		case m := <-p.other:
			require.Equal(t, "null", string(m.ID), line)
			require.NotNil(t, m.Error, line)
			require.Equal(t, code, m.Error.Code, line)
			require.Contains(t, m.Error.Message, msg, line)
		case <-time.After(rpcTimeout):
			t.Fatalf("no answer to %q", line)
		}
	}
	nullError(`this is not json`, -32700, "Parse error")
	nullError(`{"jsonrpc": "2.0", "id": 1, "method": "execute"`, -32700, "Parse error")
	nullError(`[{"jsonrpc": "2.0", "id": 1, "method": "execute"}]`, -32600, "batches are not supported")
	nullError(`"execute"`, -32600, "expected a JSON object")
	nullError(`{"jsonrpc": "2.0", "id": {"a": 1}, "method": "execute"}`, -32600, "id must be a string, a number or null")
	nullError(`{"jsonrpc": "2.0", "id": null, "method": "nope"}`, -32601, "Method not found")

	errorFor := func(id, line string, code int, msg string) {
		t.Helper()
		m := p.rawCall(t, id, line)
		require.NotNil(t, m.Error, line)
		require.Equal(t, code, m.Error.Code, line)
		require.Contains(t, m.Error.Message, msg, line)
		require.Nil(t, m.Result)
	}
	errorFor(`5`, `{"jsonrpc": "1.0", "id": 5, "method": "execute", "params": {"code": "print(1)"}}`, -32600, `"jsonrpc" must be "2.0"`)
	errorFor(`6`, `{"jsonrpc": "2.0", "id": 6}`, -32600, "method is missing")
	errorFor(`7`, `{"jsonrpc": "2.0", "id": 7, "method": 42}`, -32600, "method must be a string")
	errorFor(`"m"`, `{"jsonrpc": "2.0", "id": "m", "method": "frobnicate"}`, -32601, `Method not found: "frobnicate" (methods: execute, open_session, register_skill, describe, interrupt, close_session, fork_session, shutdown, authenticate)`)

	for i, tc := range []struct{ method, params, msg string }{
		{"execute", `["print(1)"]`, "params must be an object"},
		{"execute", `{"code": "1", "cod": "x"}`, `unknown parameter "cod"`},
		{"execute", `{"code": "1", "kind": "root"}`, `kind must be one of cli, gateway, automation, not "root"`},
		{"execute", `{"code": "1", "tools": "terminal"}`, "tools must be a list of tool names"},
		{"execute", `{"code": "1", "enabled_tools": {"terminal": true}}`, "enabled_tools must be a list of tool names"},
		{"execute", `{"code": "1", "tools": [], "enabled_tools": []}`, "give tools or enabled_tools, not both"},
		{"execute", `{"code": "1", "skill_env": "TOKEN"}`, "skill_env must be a list of environment variable names"},
		{"execute", `{"code": "1", "timeout": 0}`, "timeout must be a number of seconds greater than 0"},
		{"execute", `{"code": "1", "timeout": "10"}`, "timeout must be a number"},
		{"execute", `{"code": "1", "max_tool_calls": 1.5}`, "max_tool_calls must be a whole number of 0 or more, not 1.5"},
		{"execute", `{"code": "1", "max_tool_calls": -1}`, "max_tool_calls must be a whole number"},
		{"execute", `{"code": "1", "mode": "sandbox"}`, `mode must be "strict" or "project", not "sandbox"`},
		{"execute", `{"code": "1", "mode": "stict"}`, `mode must be "strict" or "project", not "stict"; did you mean "strict"?`},
		{"execute", `{"code": "1", "mode": " "}`, `mode must be "strict" or "project", not " "`},
		{"execute", `{"code": "1", "session": ""}`, "session must be a non-empty string"},
		{"execute", `{"code": "1", "reset": "yes"}`, "reset must be true or false"},
		{"execute", `{"code": "1", "workdir": 3}`, "workdir must be a string"},
		{"interrupt", `{}`, "session is required"},
		{"interrupt", `{"session": "s", "reason": 1}`, "reason must be a string"},
		{"close_session", `{"session": 3}`, "session must be a string"},
		{"close_session", `{"session": "s", "all": true}`, `unknown parameter "all"`},
		{"execute", `{"code": "1", "delegate_tools": "web_search"}`, "delegate_tools must be a list of tool names"},
		{"open_session", `{"session": "s", "delegate_tools": {"web_search": true}}`, "delegate_tools must be a list of tool names"},
		{"open_session", `{"session": "", "delegate_tools": []}`, "session must be a non-empty string"},
		{"open_session", `{"session": "s", "tools": []}`, `unknown parameter "tools"`},
		{"open_session", `{"session": "s", "skill_env": [1]}`, "skill_env must be a list of environment variable names"},
		{"register_skill", `{"session": "s"}`, "give the skill's variables: names (a list), path (its SKILL.md or directory) or content (its SKILL.md text)"},
		{"register_skill", `{"names": "TOKEN"}`, "names must be a list of environment variable names"},
		{"register_skill", `{"path": "/does/not/exist/SKILL.md"}`, "path: skill /does/not/exist/SKILL.md: "},
		{"register_skill", `{"content": "---\nrequired_environment_variables: [A\n---\n"}`, "content: its frontmatter is not valid YAML"},
		{"register_skill", `{"names": [], "skills": []}`, `unknown parameter "skills"`},
		{"describe", `{"mode": "sandbox"}`, `mode must be "strict" or "project", not "sandbox"`},
		{"describe", `{"mode": "projcet"}`, `mode must be "strict" or "project", not "projcet"; did you mean "project"?`},
		{"describe", `{"tools": "terminal"}`, "tools must be a list of tool names"},
	} {
		id := strconv.Itoa(100 + i)
		errorFor(id, fmt.Sprintf(`{"jsonrpc": "2.0", "id": %s, "method": %q, "params": %s}`, id, tc.method, tc.params), -32602, "Invalid params: "+tc.msg)
	}

	// Empty lines are skipped, notifications get no response even when
	// wrong, and string ids are echoed: the server keeps serving.
	p.send("")
	p.send("   ")
	p.send(`{"jsonrpc": "2.0", "method": "execute", "params": {"kind": "nope"}}`)
	p.send(`{"jsonrpc": "2.0", "method": "frobnicate"}`)
	m := p.rawCall(t, `"abc"`, `{"jsonrpc": "2.0", "id": "abc", "method": "execute", "params": {"code": "print(6 * 7)", "mode": "strict"}}`)
	res := execResult(t, m)
	require.Equal(t, "success", res.Status, res.Output)
	require.Equal(t, "42\n", res.Output)
	m = p.rawCall(t, `-1.5`, `{"jsonrpc": "2.0", "id": -1.5, "method": "close_session", "params": {"session": "nobody"}}`)
	require.JSONEq(t, `{"closed": true}`, string(m.Result))
	select {
	case m := <-p.other:
		t.Fatalf("unexpected message %+v", m)
	default:
	}
	require.Zero(t, p.asked.Load())
}

// TestServeInProcess drives serve through pipes in this process: a
// notification runs without a response, and stdin EOF ends the server
// once the calls in flight have answered.
func TestServeInProcess(t *testing.T) {
	t.Parallel()
	conf := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(conf, []byte(defaultServeConfig), 0o600))
	workdir := t.TempDir()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var stderr syncBuffer
	exit := make(chan int, 1)
	go func() {
		code := Run([]string{"serve", "--config", conf, "--log-level", "debug"}, inR, outW, &stderr)
		outW.Close()
		exit <- code
	}()
	c := newServeClient(outR, inW)
	marker := filepath.Join(workdir, "notified.txt")
	c.send(`{"jsonrpc": "2.0", "method": "execute", "params": {"mode": "strict", "workdir": ` + jsonString(workdir) + `, "session": "n", "code": "from hermes_tools import write_file\nwrite_file('notified.txt', 'yes')"}}`)
	// Calls of one session run in order: once this answers, the
	// notification has run.
	res := c.exec(t, map[string]any{"code": "print('after')", "mode": "strict", "session": "n"})
	require.Equal(t, "after\n", res.Output)
	b, err := os.ReadFile(marker)
	require.NoError(t, err)
	require.Equal(t, "yes", string(b))

	slow := c.start("execute", map[string]any{"code": "from hermes_tools import write_file\nwrite_file('slow-started.txt', 'x')\nimport time\ntime.sleep(1)\nprint('slept')", "mode": "strict", "workdir": workdir, "session": "slow"})
	// EOF once the call runs (it says so with a file), not after a sleep.
	waitExists(t, filepath.Join(workdir, "slow-started.txt"), stderr.String)
	inW.Close()
	res = execResult(t, wait(t, slow))
	require.Equal(t, "slept\n", res.Output, "a call in flight at EOF still answers")
	select {
	case code := <-exit:
		require.Equal(t, 0, code, stderr.String())
	case <-time.After(time.Minute):
		t.Fatal("serve did not end at stdin EOF")
	}
	require.Contains(t, stderr.String(), "hermes-wasm-exec serve: serving JSON-RPC 2.0 on stdin/stdout")
	require.Contains(t, stderr.String(), "debug: serve: <- execute id=")
	require.Empty(t, c.badLines())
}

func TestServeExecute(t *testing.T) {
	t.Parallel()
	e := newServeEnv(t, defaultServeConfig)
	require.NoError(t, os.CopyFS(e.workdir, os.DirFS("../../testdata/project")))
	script, err := os.ReadFile("../../testdata/examples/data_pipeline.py")
	require.NoError(t, err)
	p := e.start()
	for _, mode := range []string{"strict", "project"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			res := p.exec(t, map[string]any{"code": string(script), "mode": mode, "workdir": e.workdir, "session": "pipeline-" + mode})
			require.Equal(t, "success", res.Status, res.Output)
			require.Equal(t, mode, res.Mode)
			var got struct {
				Files     int `json:"files"`
				Functions int `json:"functions"`
			}
			require.NoError(t, json.Unmarshal([]byte(res.Output), &got), res.Output)
			require.Equal(t, 4, got.Files)
			require.Equal(t, 6, got.Functions)
			require.Equal(t, 5, res.ToolCallsMade)
			require.Len(t, res.ToolCalls, 5)

			// The raw result is exactly the result JSON of `run`.
			m := p.call(t, "execute", map[string]any{"code": "import sys\nprint('out')\nsys.exit(3)", "mode": mode, "session": "exit-" + mode, "timeout": 30, "max_tool_calls": 0, "tools": []string{}})
			var raw map[string]any
			require.NoError(t, json.Unmarshal(m.Result, &raw))
			for _, k := range []string{"status", "output", "tool_calls_made", "duration_seconds", "exit_code", "mode", "stdout_truncated", "stdout_bytes_captured", "stdout_bytes_total", "stdout_bytes_omitted", "tool_calls"} {
				require.Contains(t, raw, k)
			}
			require.Equal(t, "error", raw["status"])
			require.Equal(t, "Script exited with code 3", raw["error"])
			require.EqualValues(t, 3, raw["exit_code"])

			// tools limits the enabled tools; other tools' names (Hermes's
			// lists hold them) are dropped, and enabled_tools is its
			// Hermes spelling.
			for _, param := range []string{"tools", "enabled_tools"} {
				res = p.exec(t, map[string]any{"code": "from hermes_tools import read_file", "mode": mode, "workdir": e.workdir, "session": "tools-" + param + "-" + mode, param: []string{"terminal", "vision_analyze", "delegate_task"}})
				require.Equal(t, "error", res.Status, res.Output)
				require.Contains(t, res.Output, "ImportError: cannot import name 'read_file' from 'hermes_tools'")
				res = p.exec(t, map[string]any{"code": "from hermes_tools import terminal\nprint(terminal('echo hi')['output'].strip())", "mode": mode, "workdir": e.workdir, "session": "tools-" + param + "-" + mode, param: []string{"terminal", "vision_analyze"}})
				require.Equal(t, "success", res.Status, res.Output)
				require.Equal(t, "hi\n", res.Output)
			}
			// A bad working dir is a result that says so.
			res = p.exec(t, map[string]any{"code": "print(1)", "mode": mode, "workdir": filepath.Join(e.workdir, "missing"), "session": "wd-" + mode})
			require.Equal(t, "error", res.Status)
			require.Contains(t, res.Error, "working dir")
		})
	}
}

// rendezvous is a script that shows two calls run at the same time
// without timing them: it writes the file started-ME in its working dir
// (through hermes_tools: a strict script sees only its staging dir), waits
// until started-OTHER exists, then prints me. Two such calls both answer
// only if they run at once; run one at a time, the first gives up after
// 120 s and fails. The polls back off to one each 5 s, within the default
// budget of 50 tool calls. (A loaded machine made two 1 s sleeps take
// longer than the 1.9 s a test once allowed them.)
func rendezvous(me, other string) string {
	return fmt.Sprintf(`import time
from hermes_tools import read_file, write_file
write_file('started-%[1]s', 'x')
deadline, pause = time.time() + 120, 0.02
while read_file('started-%[2]s').get('error'):
    if time.time() > deadline:
        raise SystemExit('%[2]s never ran beside %[1]s')
    time.sleep(pause)
    pause = min(pause * 2, 5)
print('%[1]s')`, me, other)
}

// TestServeConcurrency: calls of different sessions run at the same time;
// calls of one session run one at a time, in the order they arrived. Not
// parallel with other tests: their calls would take the execution slots
// the two sessions need at once.
func TestServeConcurrency(t *testing.T) {
	e := newServeEnv(t, defaultServeConfig)
	p := e.start()
	for _, mode := range []string{"strict", "project"} {
		for _, s := range []string{"a", "b"} {
			res := p.exec(t, map[string]any{"code": "print(1)", "mode": mode, "session": mode + s})
			require.Equal(t, "success", res.Status, res.Output)
		}
		a := p.start("execute", map[string]any{"code": rendezvous(mode+"a", mode+"b"), "mode": mode, "workdir": e.workdir, "session": mode + "a"})
		b := p.start("execute", map[string]any{"code": rendezvous(mode+"b", mode+"a"), "mode": mode, "workdir": e.workdir, "session": mode + "b"})
		ra, rb := execResult(t, wait(t, a)), execResult(t, wait(t, b))
		require.Equal(t, mode+"a\n", ra.Output, "%s: two sessions' calls must run concurrently", mode)
		require.Equal(t, mode+"b\n", rb.Output, "%s: two sessions' calls must run concurrently", mode)
	}

	// One session, one connection: the second call starts after the first
	// ends, though it arrived while the first was running and is quicker.
	first := p.start("execute", map[string]any{"code": "import time\ntime.sleep(0.7)\nopen('order.txt', 'a').write('1')", "mode": "project", "workdir": e.workdir, "session": "o"})
	second := p.start("execute", map[string]any{"code": "open('order.txt', 'a').write('2')", "mode": "project", "workdir": e.workdir, "session": "o"})
	third := p.start("execute", map[string]any{"code": "open('order.txt', 'a').write('3')", "mode": "project", "workdir": e.workdir, "session": "o"})
	for _, ch := range []<-chan testMsg{third, second, first} {
		require.Equal(t, "success", execResult(t, wait(t, ch)).Status)
	}
	b2, err := os.ReadFile(filepath.Join(e.workdir, "order.txt"))
	require.NoError(t, err)
	require.Equal(t, "123", string(b2))
}

// TestServeShutdown: shutdown answers {}, interrupts the running calls,
// and the process exits 0 leaving no temp dir (checked at cleanup).
func TestServeShutdown(t *testing.T) {
	t.Parallel()
	e := newServeEnv(t, defaultServeConfig)
	p := e.start()
	for _, mode := range []string{"strict", "project"} {
		res := p.exec(t, map[string]any{"code": "x = 1\nprint(x)", "mode": mode, "session": "kept-" + mode})
		require.Equal(t, "success", res.Status, res.Output)
	}
	long := p.start("execute", map[string]any{"code": "open('long-started', 'w').close()\nimport time\ntime.sleep(600)", "mode": "project", "workdir": e.workdir, "session": "long"})
	waitExists(t, filepath.Join(e.workdir, "long-started"), p.stderr.String)
	start := time.Now()
	m := p.call(t, "shutdown", nil)
	require.Nil(t, m.Error)
	require.JSONEq(t, `{}`, string(m.Result))
	res := execResult(t, wait(t, long))
	require.Equal(t, "interrupted", res.Status)
	require.True(t, strings.HasSuffix(res.Output, "[execution interrupted — the server is shutting down]"), res.Output)
	require.Equal(t, 0, p.waitExit(60*time.Second), p.stderr.String())
	// Interrupted, not waited for: the call sleeps 600 s; the bound is
	// loose for a loaded machine.
	require.Less(t, time.Since(start), 60*time.Second)
}

func TestServeStdinEOF(t *testing.T) {
	t.Parallel()
	e := newServeEnv(t, defaultServeConfig)
	p := e.start()
	res := p.exec(t, map[string]any{"code": "y = 2\nprint(y)", "mode": "project", "session": "s"})
	require.Equal(t, "success", res.Status, res.Output)
	p.stdin.Close()
	require.Equal(t, 0, p.waitExit(60*time.Second), p.stderr.String())
}

func TestServeUsage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--listen", "0.0.0.0:9000"}, "--listen must be unix:PATH or tcp:127.0.0.1:PORT"},
		{[]string{"serve", "--listen", "tcp:0.0.0.0:0", "--token-file", "t"}, "only loopback addresses"},
		{[]string{"serve", "--listen", "tcp:example.com:80", "--token-file", "t"}, "only loopback addresses"},
		{[]string{"serve", "--listen", "tcp:127.0.0.1"}, "missing port"},
		{[]string{"serve", "--listen", "unix:s.sock", "--token-file", "t"}, "--token-file goes with --listen tcp:"},
		{[]string{"serve", "--token-file", "t"}, "--token-file goes with --listen tcp:"},
		{[]string{"serve", "--listen", "tcp:127.0.0.1:0", "--auth-timeout", "-1s"}, `--auth-timeout "-1s": must not be negative`},
		{[]string{"serve", "--listen", "tcp:127.0.0.1:0", "--max-unauthenticated", "-1"}, `--max-unauthenticated "-1": give a whole number of 0 or more`},
		{[]string{"serve", "--log-level", "trace"}, `--log-level "trace": give info or debug`},
		{[]string{"serve", "--rpc-transport", "pipe"}, `--rpc-transport "pipe": give unix or tcp`},
		{[]string{"serve", "extra"}, "unexpected argument"},
		{[]string{"serve", "--bogus"}, "unknown flag --bogus\nsee: hermes-wasm-exec serve --help"},
	} {
		code, stdout, stderr := child(t, []string{"HERMES_SERVE_TOKEN=", "HERMES_HOME=" + t.TempDir()}, "", tc.args...)
		require.Equal(t, 2, code, "%v: %s", tc.args, stderr)
		require.Empty(t, stdout)
		require.Contains(t, stderr, tc.want, tc.args)
	}
	// A bad config is a usage error too.
	conf := filepath.Join(t.TempDir(), "c.yaml")
	require.NoError(t, os.WriteFile(conf, []byte("approvals:\n  timeout: maybe\n"), 0o600))
	code, _, stderr := child(t, nil, "", "serve", "--config", conf)
	require.Equal(t, 2, code)
	require.Contains(t, stderr, "approvals.timeout")
	// The usage text names serve.
	var out bytes.Buffer
	require.Equal(t, 0, Run([]string{"help"}, nil, &out, io.Discard))
	require.Contains(t, out.String(), "serve [flags]")
	out.Reset()
	require.Equal(t, 0, Run([]string{"serve", "--help"}, nil, &out, io.Discard))
	require.Contains(t, out.String(), "--listen unix:PATH|tcp:127.0.0.1:PORT")
}

// waitListening waits for serve's "listening on ..." line and returns the
// address after the network prefix.
func waitListening(t *testing.T, stderr *syncBuffer, network string) string {
	t.Helper()
	re := regexp.MustCompile(`listening on ` + network + `:(\S+)`)
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if m := re.FindStringSubmatch(stderr.String()); m != nil {
			return m[1]
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("serve did not say where it listens:\n%s", stderr.String())
	return ""
}

// listenProc is a `serve --listen ...` child process.
type listenProc struct {
	stderr *syncBuffer
	exited chan struct{}
	code   int
}

// exitCode waits for the process to exit and returns its exit code.
func (l *listenProc) exitCode(t *testing.T) int {
	t.Helper()
	select {
	case <-l.exited:
		return l.code
	case <-time.After(time.Minute):
		t.Fatalf("serve did not exit; stderr:\n%s", l.stderr.String())
	}
	return -1
}

// startListening runs `serve --listen ...`; the test must end it (the
// cleanup kills a server still running and fails).
func (e *serveEnv) startListening(args ...string) *listenProc {
	t := e.t
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"serve", "--config", e.conf}, args...)...)
	cmd.Env = append(os.Environ(), e.env...)
	l := &listenProc{stderr: &syncBuffer{}, exited: make(chan struct{})}
	cmd.Stderr = l.stderr
	require.NoError(t, cmd.Start())
	go func() {
		cmd.Wait()
		l.code = cmd.ProcessState.ExitCode()
		close(l.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-l.exited:
		default:
			cmd.Process.Kill()
			<-l.exited
			t.Errorf("serve still running; stderr:\n%s", l.stderr.String())
		}
	})
	return l
}

// tcpClients starts a server on loopback TCP with a generated token file
// and connects n clients, each authenticated.
func (e *serveEnv) tcpClients(t *testing.T, n int) (*listenProc, []*serveClient, []net.Conn) {
	t.Helper()
	l := e.startListening("--listen", "tcp:127.0.0.1:0", "--token-file", filepath.Join(e.home, "tok"))
	addr := waitListening(t, l.stderr, "tcp")
	tok, err := os.ReadFile(filepath.Join(e.home, "tok"))
	require.NoError(t, err)
	var clients []*serveClient
	var conns []net.Conn
	for range n {
		c, nc := dialClient(t, "tcp", addr)
		require.Nil(t, c.call(t, "authenticate", map[string]any{"token": strings.TrimSpace(string(tok))}).Error)
		clients, conns = append(clients, c), append(conns, nc)
	}
	return l, clients, conns
}

func dialClient(t *testing.T, network, addr string) (*serveClient, net.Conn) {
	t.Helper()
	nc, err := net.Dial(network, addr)
	require.NoError(t, err)
	t.Cleanup(func() { nc.Close() })
	return newServeClient(nc, nc), nc
}

func TestServeTCP(t *testing.T) {
	t.Parallel()
	t.Run("generated token", func(t *testing.T) {
		t.Parallel()
		e := newServeEnv(t, defaultServeConfig)
		tokenFile := filepath.Join(e.home, "token")
		l := e.startListening("--listen", "tcp:127.0.0.1:0", "--token-file", tokenFile)
		addr := waitListening(t, l.stderr, "tcp")
		require.Contains(t, l.stderr.String(), "each connection calls authenticate first, within 10s, with a token generated into "+tokenFile+" (owner-only; removed when the server exits)")
		tok, err := os.ReadFile(tokenFile)
		require.NoError(t, err)
		token := strings.TrimSpace(string(tok))
		require.Regexp(t, `^[0-9a-f]{64}$`, token)
		if goruntime.GOOS != "windows" {
			fi, err := os.Stat(tokenFile)
			require.NoError(t, err)
			require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
		}

		// Nothing works before authenticate; a wrong token closes the
		// connection.
		bad, _ := dialClient(t, "tcp", addr)
		m := bad.call(t, "execute", map[string]any{"code": "print(1)"})
		require.NotNil(t, m.Error)
		require.Equal(t, -32001, m.Error.Code)
		require.Contains(t, m.Error.Message, "call authenticate")
		m = bad.call(t, "authenticate", map[string]any{"token": strings.Repeat("0", 64)})
		require.NotNil(t, m.Error)
		require.Equal(t, -32001, m.Error.Code)
		select {
		case <-bad.closed:
		case <-time.After(10 * time.Second):
			t.Fatal("the connection stays open after a wrong token")
		}

		good, _ := dialClient(t, "tcp", addr)
		m = good.call(t, "authenticate", map[string]any{"token": token})
		require.Nil(t, m.Error)
		require.JSONEq(t, `{"authenticated": true}`, string(m.Result))
		res := good.exec(t, map[string]any{"code": "print('over tcp')", "mode": "strict"})
		require.Equal(t, "over tcp\n", res.Output)
		require.Nil(t, good.call(t, "shutdown", nil).Error)
		require.Equal(t, 0, l.exitCode(t), l.stderr.String())
		_, err = os.Stat(tokenFile)
		require.True(t, os.IsNotExist(err), "the generated token file is removed on exit")
		left, _ := os.ReadDir(e.tmp)
		require.Empty(t, left)
	})
	t.Run("no token given", func(t *testing.T) {
		// Neither $HERMES_SERVE_TOKEN nor --token-file: a token is
		// generated into an owner-only file in a private dir, and needed.
		t.Parallel()
		e := newServeEnv(t, defaultServeConfig)
		e.env = append(e.env, "HERMES_SERVE_TOKEN=")
		l := e.startListening("--listen", "tcp:127.0.0.1:0")
		addr := waitListening(t, l.stderr, "tcp")
		m := regexp.MustCompile(`with a token generated into (\S+) \(owner-only`).FindStringSubmatch(l.stderr.String())
		require.NotNil(t, m, l.stderr.String())
		if goruntime.GOOS != "windows" { // where TMPDIR does not set the temp dir
			require.Equal(t, filepath.Clean(e.tmp), filepath.Dir(filepath.Dir(m[1])), "in a dir of its own in the temp dir")
		}
		tok, err := os.ReadFile(m[1])
		require.NoError(t, err)
		token := strings.TrimSpace(string(tok))
		require.NotContains(t, l.stderr.String(), token)
		c, _ := dialClient(t, "tcp", addr)
		require.Equal(t, -32001, c.call(t, "execute", map[string]any{"code": "print(1)"}).Error.Code)
		require.Nil(t, c.call(t, "authenticate", map[string]any{"token": token}).Error)
		if landlock.Probe().Enforced && goruntime.GOOS == "linux" {
			// The generated file is the executor's state too: a run may
			// not rewrite it (before, only a --token-file was protected).
			r := c.call(t, "execute", map[string]any{"mode": "project", "code": fmt.Sprintf("open(%q, 'w').write('x')", m[1])})
			require.Nil(t, r.Error)
			require.Contains(t, string(r.Result), "PermissionError")
			tok2, err := os.ReadFile(m[1])
			require.NoError(t, err)
			require.Equal(t, string(tok), string(tok2))
		}
		require.Nil(t, c.call(t, "shutdown", nil).Error)
		require.Equal(t, 0, l.exitCode(t), l.stderr.String())
		left, _ := os.ReadDir(e.tmp)
		require.Empty(t, left, "the token file and its dir are removed at exit")
	})
	t.Run("token from the environment", func(t *testing.T) {
		t.Parallel()
		e := newServeEnv(t, defaultServeConfig)
		e.env = append(e.env, "HERMES_SERVE_TOKEN=s3cret-token")
		l := e.startListening("--listen", "tcp:localhost:0")
		addr := waitListening(t, l.stderr, "tcp")
		require.True(t, strings.HasPrefix(addr, "127.0.0.1:"), addr)
		c, _ := dialClient(t, "tcp", addr)
		m := c.call(t, "authenticate", map[string]any{"token": "s3cret-token"})
		require.Nil(t, m.Error)
		m = c.call(t, "authenticate", map[string]any{})
		require.NotNil(t, m.Error)
		require.Equal(t, -32602, m.Error.Code)
		require.Nil(t, c.call(t, "shutdown", nil).Error)
		require.Equal(t, 0, l.exitCode(t))
	})
}

// approvalsEnv is a serve process whose client answers approvals with
// answer; the working dir has a build/ dir for rm -rf to remove.
func approvalsEnv(t *testing.T, configYAML string, answer func(approveParams) map[string]any) (*serveEnv, *serveProc) {
	t.Helper()
	e := newServeEnv(t, defaultServeConfig+configYAML)
	require.NoError(t, os.MkdirAll(filepath.Join(e.workdir, "build", "obj"), 0o755))
	rmShim(t, e.workdir)
	p := e.start()
	p.setAnswer(answer)
	return e, p
}

func approved(scope string) func(approveParams) map[string]any {
	return func(approveParams) map[string]any {
		return map[string]any{"result": map[string]any{"approved": true, "scope": scope}}
	}
}

func denied(approveParams) map[string]any {
	return map[string]any{"result": map[string]any{"approved": false}}
}

// sideEffect writes ran.txt in the working dir through write_file.
const sideEffect = "from hermes_tools import write_file\nwrite_file('ran.txt', 'ran')\nprint('ran')\n"

func ranFile(e *serveEnv) bool {
	_, err := os.Stat(filepath.Join(e.workdir, "ran.txt"))
	return err == nil
}

func TestServeApprovals(t *testing.T) {
	t.Parallel()
	gateway := func(e *serveEnv, session string) map[string]any {
		return map[string]any{"code": sideEffect, "mode": "strict", "workdir": e.workdir, "session": session, "kind": "gateway"}
	}
	const rmScript = "from hermes_tools import terminal\nr = terminal('rm -rf ./build')\nprint(r.get('error'))\nprint('after')\n"
	cli := func(e *serveEnv, session string) map[string]any {
		return map[string]any{"code": rmScript, "mode": "strict", "workdir": e.workdir, "session": session, "kind": "cli"}
	}
	buildExists := func(e *serveEnv) bool {
		_, err := os.Stat(filepath.Join(e.workdir, "build"))
		return err == nil
	}

	t.Run("gateway approved", func(t *testing.T) {
		t.Parallel()
		e, p := approvalsEnv(t, "", approved("once"))
		m := p.call(t, "execute", gateway(e, "g"))
		res := execResult(t, m)
		require.Equal(t, "success", res.Status, res.Output)
		require.Equal(t, "ran\n", res.Output)
		require.False(t, res.Blocked)
		require.True(t, ranFile(e))
		ask := p.nextAsk(t)
		require.Equal(t, "script", ask.Type)
		require.Equal(t, "g", ask.Session)
		require.Equal(t, sideEffect, ask.Code)
		require.Empty(t, ask.Command)
		require.NotEmpty(t, ask.RequestID, "the approve request names the execute request")
		require.Equal(t, int32(1), p.asked.Load())
	})
	t.Run("automation asks too", func(t *testing.T) {
		t.Parallel()
		e, p := approvalsEnv(t, "", approved("once"))
		params := gateway(e, "auto")
		params["kind"] = "automation"
		require.Equal(t, "success", p.exec(t, params).Status)
		require.Equal(t, "script", p.nextAsk(t).Type)
	})
	t.Run("gateway denied", func(t *testing.T) {
		t.Parallel()
		e, p := approvalsEnv(t, "", denied)
		res := p.exec(t, gateway(e, "g"))
		require.True(t, res.Blocked)
		require.Equal(t, "error", res.Status)
		require.Contains(t, res.Error, "Script blocked")
		require.Contains(t, res.Error, "denied")
		require.Equal(t, res.Error, res.Output)
		require.Zero(t, res.ToolCallsMade)
		require.False(t, ranFile(e), "a denied script never runs")
	})
	t.Run("client answers with an error", func(t *testing.T) {
		t.Parallel()
		e, p := approvalsEnv(t, "", func(approveParams) map[string]any {
			return map[string]any{"error": map[string]any{"code": -32000, "message": "no UI to ask"}}
		})
		res := p.exec(t, gateway(e, "g"))
		require.True(t, res.Blocked)
		require.Contains(t, res.Error, "no UI to ask")
		require.False(t, ranFile(e))
	})
	t.Run("malformed answer", func(t *testing.T) {
		t.Parallel()
		e, p := approvalsEnv(t, "", func(approveParams) map[string]any {
			return map[string]any{"result": map[string]any{"approved": "yes"}}
		})
		res := p.exec(t, gateway(e, "g"))
		require.True(t, res.Blocked)
		require.False(t, ranFile(e))
	})
	t.Run("nobody answers", func(t *testing.T) {
		t.Parallel()
		e, p := approvalsEnv(t, "approvals:\n  timeout: 1\n", nil)
		start := time.Now()
		res := p.exec(t, gateway(e, "g"))
		require.True(t, res.Blocked)
		require.Contains(t, res.Error, "nobody answered within 1s")
		// The configured 1 s, not the default 120 s (loose for a loaded machine).
		require.Less(t, time.Since(start), 60*time.Second)
		require.False(t, ranFile(e))
	})
	t.Run("cli command denied", func(t *testing.T) {
		t.Parallel()
		e, p := approvalsEnv(t, "", denied)
		res := p.exec(t, cli(e, "c"))
		require.Equal(t, "success", res.Status, res.Output)
		require.False(t, res.Blocked)
		require.Contains(t, res.Output, "Command blocked: `rm -rf ./build` needs approval (recursive delete) and was denied.")
		require.True(t, strings.HasSuffix(res.Output, "after\n"), "the script continues")
		require.True(t, buildExists(e))
		ask := p.nextAsk(t)
		require.Equal(t, approveParams{Type: "command", Session: "c", Command: "rm -rf ./build", Reason: "recursive delete", RequestID: ask.RequestID, ID: ask.ID}, ask)
		require.Equal(t, int32(1), p.asked.Load(), "a cli script itself is not asked about")
	})
	t.Run("cli command approved", func(t *testing.T) {
		t.Parallel()
		e, p := approvalsEnv(t, "", approved("once"))
		res := p.exec(t, cli(e, "c"))
		require.Equal(t, "None\nafter\n", res.Output)
		require.False(t, buildExists(e))
	})
	t.Run("harmless commands are not asked about", func(t *testing.T) {
		t.Parallel()
		e, p := approvalsEnv(t, "", denied)
		res := p.exec(t, map[string]any{"code": "from hermes_tools import terminal\nprint(terminal('" + listDir("build") + "')['output'].split())", "mode": "strict", "workdir": e.workdir, "session": "h"})
		require.Equal(t, "['obj']\n", res.Output)
		require.Zero(t, p.asked.Load())
	})
	t.Run("session scope is remembered", func(t *testing.T) {
		t.Parallel()
		e, p := approvalsEnv(t, "", approved("session"))
		require.Equal(t, "success", p.exec(t, gateway(e, "g")).Status)
		require.Equal(t, "success", p.exec(t, gateway(e, "g")).Status)
		require.Equal(t, int32(1), p.asked.Load(), "the second script of the session is not asked about")
		require.Equal(t, "success", p.exec(t, gateway(e, "other")).Status)
		require.Equal(t, int32(2), p.asked.Load(), "another session is asked")
		// Commands: the same dangerous pattern is approved for the session.
		rm := "from hermes_tools import terminal\nprint(terminal('rm -rf ./build')['exit_code'])\nprint(terminal('rm -rf ./dist')['exit_code'])\n"
		res := p.exec(t, map[string]any{"code": rm, "mode": "strict", "workdir": e.workdir, "session": "c"})
		require.Equal(t, "0\n0\n", res.Output)
		require.Equal(t, int32(3), p.asked.Load())
		// close_session forgets it.
		require.JSONEq(t, `{"closed": true}`, string(p.call(t, "close_session", map[string]any{"session": "g"}).Result))
		require.Equal(t, "success", p.exec(t, gateway(e, "g")).Status)
		require.Equal(t, int32(4), p.asked.Load())
	})
	t.Run("always scope", func(t *testing.T) {
		t.Parallel()
		e, p := approvalsEnv(t, "", approved("always"))
		require.Equal(t, "success", p.exec(t, gateway(e, "g1")).Status)
		require.Equal(t, "success", p.exec(t, gateway(e, "g2")).Status)
		require.Equal(t, int32(1), p.asked.Load())
	})
	t.Run("mode deny", func(t *testing.T) {
		t.Parallel()
		e, p := approvalsEnv(t, "approvals:\n  mode: deny\n", approved("once"))
		res := p.exec(t, gateway(e, "g"))
		require.True(t, res.Blocked)
		require.Contains(t, res.Error, `approvals.mode is "deny"`)
		require.False(t, ranFile(e))
		res = p.exec(t, cli(e, "c"))
		require.Contains(t, res.Output, "Command blocked: `rm -rf ./build`")
		require.True(t, buildExists(e))
		require.Zero(t, p.asked.Load(), "deny never asks")
	})
	t.Run("mode off", func(t *testing.T) {
		t.Parallel()
		e, p := approvalsEnv(t, "approvals:\n  mode: off\n", denied)
		res := p.exec(t, gateway(e, "g"))
		require.Equal(t, "success", res.Status)
		require.True(t, ranFile(e))
		res = p.exec(t, cli(e, "c"))
		require.Equal(t, "None\nafter\n", res.Output)
		require.False(t, buildExists(e))
		require.Zero(t, p.asked.Load(), "off never asks")
	})
	t.Run("each connection approves its own calls", func(t *testing.T) {
		t.Parallel()
		e := newServeEnv(t, defaultServeConfig)
		l, clients, _ := e.tcpClients(t, 2)
		yes, no := clients[0], clients[1]
		yes.setAnswer(approved("once"))
		no.setAnswer(denied)
		resNo := no.start("execute", gateway(e, "n"))
		resYes := yes.start("execute", gateway(e, "y"))
		require.Equal(t, "success", execResult(t, wait(t, resYes)).Status)
		require.True(t, execResult(t, wait(t, resNo)).Blocked)
		require.Equal(t, "y", yes.nextAsk(t).Session)
		require.Equal(t, "n", no.nextAsk(t).Session)
		require.Nil(t, yes.call(t, "shutdown", nil).Error)
		require.Equal(t, 0, l.exitCode(t))
	})
}

// TestRunApprovals covers run's --kind and --yes: without a terminal
// nobody is asked, so what needs approval is blocked.
func TestRunApprovals(t *testing.T) {
	e := newEnv(t)
	require.NoError(t, os.MkdirAll(filepath.Join(e.workdir, "build"), 0o755))
	rmShim(t, e.workdir)
	code, res, _ := e.run(sideEffect, "--kind", "gateway")
	require.Equal(t, 1, code)
	require.True(t, res.Blocked)
	require.Contains(t, res.Error, "Script blocked: approval is required for gateway sessions and nobody is connected to approve it")
	_, err := os.Stat(filepath.Join(e.workdir, "ran.txt"))
	require.True(t, os.IsNotExist(err))

	code, res, _ = e.run(sideEffect, "--kind", "automation", "--yes")
	require.Equal(t, 0, code, res.Output)
	require.Equal(t, "ran\n", res.Output)

	rm := "from hermes_tools import terminal\nprint(terminal('rm -rf ./build').get('error'))\n"
	code, res, _ = e.run(rm)
	require.Equal(t, 0, code, res.Output)
	require.Contains(t, res.Output, "Command blocked: `rm -rf ./build` needs approval (recursive delete) and nobody is connected to approve it")
	require.DirExists(t, filepath.Join(e.workdir, "build"))
	code, res, _ = e.run(rm, "--kind", "cli", "--yes")
	require.Equal(t, 0, code, res.Output)
	require.Equal(t, "None\n", res.Output)
	require.NoDirExists(t, filepath.Join(e.workdir, "build"))

	// --yes wins over approvals.mode deny in the config.
	require.NoError(t, os.WriteFile(filepath.Join(e.home, "config.yaml"), []byte("approvals:\n  mode: deny\n"), 0o600))
	code, res, _ = e.run("print('yes')", "--kind", "gateway", "--yes")
	require.Equal(t, 0, code, res.Output)

	var errb bytes.Buffer
	require.Equal(t, 2, Run([]string{"run", "--kind", "tui", "-"}, strings.NewReader("print(1)"), io.Discard, &errb))
	require.Contains(t, errb.String(), `--kind "tui": give cli, gateway or automation`)
}

// promptedBuffer is a syncBuffer that sends on prompted (when it has
// room) each time what was written so far ends with a prompt's "[N]o: ".
type promptedBuffer struct {
	syncBuffer
	prompted chan struct{}
}

func (b *promptedBuffer) Write(p []byte) (int, error) {
	n, err := b.syncBuffer.Write(p)
	if strings.HasSuffix(b.String(), "[N]o: ") {
		select {
		case b.prompted <- struct{}{}:
		default: // a prompt nobody answers (the last ones of the test)
		}
	}
	return n, err
}

// TestPromptApprover: run's terminal prompt.
func TestPromptApprover(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	inR, inW := io.Pipe()
	out := promptedBuffer{prompted: make(chan struct{}, 1)}
	p := &promptApprover{in: inR, out: &out, kind: "gateway"}
	// Each answer is typed once the prompt is shown; a prompt that never
	// comes gets the answer after a minute, and the check of the prompt's
	// text below fails.
	answer := func(line string) {
		go func() {
			select {
			case <-out.prompted:
			case <-time.After(time.Minute):
			}
			io.WriteString(inW, line+"\n")
		}()
	}
	for line, want := range map[string]executor.Decision{
		"y": {Approved: true, Scope: "once"}, "s": {Approved: true, Scope: "session"}, "A": {Approved: true, Scope: "always"},
		"": {}, "nope": {},
	} {
		answer(line)
		d, err := p.Approve(ctx, executor.ApprovalRequest{Type: "script", Session: "s1", Code: "a\nb\n"})
		require.NoError(t, err, line)
		require.Equal(t, want, d, line)
		require.Contains(t, out.String(), `Approve running this script (2 lines) in session "s1"? [y]es once / [s]ession / [a]lways / [N]o: `)
		out.mu.Lock()
		out.b.Reset()
		out.mu.Unlock()
	}
	answer("yes")
	d, err := p.Approve(ctx, executor.ApprovalRequest{Type: "command", Session: "s1", Command: "rm -rf build", Reason: "recursive delete"})
	require.NoError(t, err)
	require.True(t, d.Approved)
	require.Contains(t, out.String(), "needs approval (recursive delete):\n    rm -rf build\nApprove this command?")

	// A command cannot redraw the prompt line: control and format characters
	// are shown escaped (a red team showed "rm -rf X" as "git status").
	answer("n")
	_, err = p.Approve(ctx, executor.ApprovalRequest{Type: "command", Command: "rm -rf X #\r\x1b[2K    git status\u202e", Reason: "recursive delete"})
	require.NoError(t, err)
	require.Contains(t, out.String(), `rm -rf X #\r\x1b[2K    git status\u202e`)
	require.NotContains(t, out.String(), "\r")
	require.NotContains(t, out.String(), "\x1b")

	tctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	_, err = p.Approve(tctx, executor.ApprovalRequest{Type: "script", Code: "x"})
	require.Error(t, err)
	require.Contains(t, out.String(), "no answer in time")
	inW.Close()
	_, err = p.Approve(ctx, executor.ApprovalRequest{Type: "script", Code: "x"})
	require.Error(t, err)
	require.False(t, isTerminal(strings.NewReader("")))
}

// ---- Session kernels through the protocol (docs/behaviour.md §7), in both modes ----

// kernelOf returns the result's kernel object, failing when it has none.
func kernelOf(t *testing.T, res result) *kernelInfo {
	t.Helper()
	require.NotNil(t, res.Kernel, "a session call's result has a kernel object: %+v", res)
	return res.Kernel
}

func TestServeKernels(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"strict", "project"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			kernelTests(t, mode)
		})
	}
}

func kernelTests(t *testing.T, mode string) {
	e := newServeEnv(t, "code_execution:\n  warm_pool: 0\n  max_session_kernels: 64\n")
	p := e.start()
	exec := func(t *testing.T, session, code string, extra ...any) result {
		t.Helper()
		params := map[string]any{"code": code, "mode": mode, "session": session, "workdir": e.workdir}
		for i := 0; i+1 < len(extra); i += 2 {
			params[extra[i].(string)] = extra[i+1]
		}
		return p.exec(t, params)
	}

	t.Run("state persists", func(t *testing.T) {
		t.Parallel()
		r1 := exec(t, "persist", "x = 41")
		require.Equal(t, "success", r1.Status, r1.Output)
		k1 := kernelOf(t, r1)
		require.Equal(t, 1, k1.ExecutionCount)
		require.False(t, k1.Reused)
		r2 := exec(t, "persist", "x += 1; print(x)")
		require.Equal(t, "success", r2.Status, r2.Output)
		require.Equal(t, "42\n", r2.Output)
		k2 := kernelOf(t, r2)
		require.Equal(t, 2, k2.ExecutionCount)
		require.True(t, k2.Reused)
	})
	t.Run("fork", func(t *testing.T) {
		t.Parallel()
		require.Equal(t, "success", exec(t, "fork-parent", "x = 41").Status)
		m := p.call(t, "fork_session", map[string]any{"from": "fork-parent", "to": "fork-child"})
		require.Nil(t, m.Error)
		forked := 1
		if mode != "strict" {
			forked = 0 // project-mode kernels are not copied
		}
		require.JSONEq(t, fmt.Sprintf(`{"forked": %d, "from": "fork-parent", "to": "fork-child"}`, forked), string(m.Result))
		res := exec(t, "fork-child", "print('x' in globals())")
		want := "False\n"
		if mode == "strict" {
			want = "True\n"
		}
		require.Equal(t, want, res.Output)
		m = p.call(t, "fork_session", map[string]any{"from": "fork-parent", "to": "fork-child"})
		require.NotNil(t, m.Error)
		require.Contains(t, m.Error.Message, "has a kernel already")
	})
	t.Run("reset", func(t *testing.T) {
		t.Parallel()
		require.Equal(t, "success", exec(t, "reset", "x = 1").Status)
		res := exec(t, "reset", "print(x)", "reset", true)
		require.Equal(t, "error", res.Status)
		require.Contains(t, res.Error, "NameError")
		require.True(t, kernelOf(t, res).StateReset)
	})
	t.Run("an exception keeps state", func(t *testing.T) {
		t.Parallel()
		require.Equal(t, "success", exec(t, "exc", "y = 1").Status)
		res := exec(t, "exc", "raise ValueError()")
		require.Equal(t, "error", res.Status)
		require.Contains(t, res.Error, "ValueError")
		require.False(t, kernelOf(t, res).Ended)
		res = exec(t, "exc", "print(y)")
		require.Equal(t, "success", res.Status, res.Output)
		require.Equal(t, "1\n", res.Output)
		require.Equal(t, 3, kernelOf(t, res).ExecutionCount)
	})
	t.Run("a timeout kills the kernel", func(t *testing.T) {
		t.Parallel()
		require.Equal(t, "success", exec(t, "timeout", "z = 5").Status)
		res := exec(t, "timeout", "while True: pass", "timeout", 2)
		require.Equal(t, "timeout", res.Status)
		k := kernelOf(t, res)
		require.True(t, k.Ended)
		require.Contains(t, strings.ToLower(k.Note), "lost", "the note says the state was lost")
		res = exec(t, "timeout", "print(z)")
		require.Equal(t, "error", res.Status)
		require.Contains(t, res.Error, "NameError")
		require.Equal(t, 1, kernelOf(t, res).ExecutionCount)
	})
	t.Run("interrupt", func(t *testing.T) {
		t.Parallel()
		require.Equal(t, "success", exec(t, "intr", "v = 1").Status)
		for i, reason := range []string{"", "the user pressed stop"} {
			started := fmt.Sprintf("intr-started-%d", i)
			long := p.start("execute", map[string]any{"code": "from hermes_tools import write_file\nwrite_file('" + started + "', 'x')\nimport time\ntime.sleep(600)", "mode": mode, "session": "intr", "workdir": e.workdir})
			waitExists(t, filepath.Join(e.workdir, started), p.stderr.String)
			params := map[string]any{"session": "intr"}
			want := "[execution interrupted — user sent a new message]"
			if reason != "" {
				params["reason"] = reason
				want = "[execution interrupted — " + reason + "]"
			}
			m := p.call(t, "interrupt", params)
			require.Nil(t, m.Error)
			require.JSONEq(t, `{"interrupted": true}`, string(m.Result))
			var res result
			select {
			case m := <-long:
				res = execResult(t, m)
			case <-time.After(60 * time.Second):
				// Prompt, not the sleep's 600 s (loose for a loaded machine).
				t.Fatal("the interrupted call did not answer within 60 s")
			}
			require.Equal(t, "interrupted", res.Status)
			require.True(t, strings.HasSuffix(res.Output, want), res.Output)
			require.True(t, kernelOf(t, res).Ended)
		}
		m := p.call(t, "interrupt", map[string]any{"session": "intr"})
		require.JSONEq(t, `{"interrupted": false}`, string(m.Result), "nothing runs")
	})
	t.Run("parallel calls on one session", func(t *testing.T) {
		t.Parallel()
		var chans []<-chan testMsg
		for range 6 {
			chans = append(chans, p.start("execute", map[string]any{"code": "counter = globals().get('counter', 0) + 1\nprint(counter)", "mode": mode, "session": "par", "workdir": e.workdir}))
		}
		var counts, outputs []int
		for _, ch := range chans {
			res := execResult(t, wait(t, ch))
			require.Equal(t, "success", res.Status, res.Output)
			counts = append(counts, kernelOf(t, res).ExecutionCount)
			n, err := strconv.Atoi(strings.TrimSpace(res.Output))
			require.NoError(t, err, res.Output)
			outputs = append(outputs, n)
		}
		sort.Ints(counts)
		sort.Ints(outputs)
		require.Equal(t, []int{1, 2, 3, 4, 5, 6}, counts)
		require.Equal(t, []int{1, 2, 3, 4, 5, 6}, outputs)
		require.Equal(t, "6\n", exec(t, "par", "print(counter)").Output)
	})
	t.Run("parent and child sessions", func(t *testing.T) {
		t.Parallel()
		require.Equal(t, "success", exec(t, "p", "v = 1").Status)
		res := exec(t, "c", "print(v)", "parent_session", "p")
		require.Equal(t, "error", res.Status)
		require.Contains(t, res.Error, "NameError", "a subagent does not see its parent's state")
		require.Equal(t, "success", exec(t, "c", "w = 2", "parent_session", "p").Status)
		res = exec(t, "p", "print(w)")
		require.Contains(t, res.Error, "NameError", "the parent does not see the subagent's state")
		require.Equal(t, "1\n", exec(t, "p", "print(v)").Output)
		require.JSONEq(t, `{"closed": true}`, string(p.call(t, "close_session", map[string]any{"session": "p"}).Result))
		res = exec(t, "c", "print(1)", "parent_session", "p")
		require.Equal(t, 1, kernelOf(t, res).ExecutionCount, "closing the parent disposed of the child's kernel")
	})
	t.Run("a subagent inherits its parent's kernel", func(t *testing.T) {
		t.Parallel()
		require.Equal(t, "success", exec(t, "p2", "v = 7").Status)
		res := exec(t, "c2", "print(globals().get('v'))", "parent_session", "p2", "inherit_parent", true)
		require.Equal(t, "success", res.Status, res.Output)
		if mode == "strict" {
			require.Equal(t, "7\n", res.Output)
			require.True(t, kernelOf(t, res).Resumed)
		} else {
			require.Equal(t, "None\n", res.Output)
			require.Contains(t, kernelOf(t, res).Note, "only the embedded interpreter's (strict, sandboxed project) can be copied")
		}
		m := p.call(t, "execute", map[string]any{"code": "pass", "session": "c3", "inherit_parent": true})
		require.NotNil(t, m.Error)
		require.Contains(t, m.Error.Message, "inherit_parent needs parent_session")
	})
	t.Run("sys.exit ends the kernel", func(t *testing.T) {
		t.Parallel()
		require.Equal(t, "success", exec(t, "exit", "q = 1").Status)
		res := exec(t, "exit", "import sys\nsys.exit(3)")
		require.Equal(t, "error", res.Status)
		require.Equal(t, "Script exited with code 3", res.Error)
		require.True(t, kernelOf(t, res).Ended)
		res = exec(t, "exit", "print(q)")
		require.Contains(t, res.Error, "NameError")
		require.Equal(t, 1, kernelOf(t, res).ExecutionCount)
	})
	t.Run("the tool budget is per call", func(t *testing.T) {
		t.Parallel()
		code := "from hermes_tools import web_search\nfor _ in range(2):\n    print(web_search('q').get('error'))\n"
		for i := range 2 {
			res := exec(t, "budget", code, "max_tool_calls", 2)
			require.Equal(t, "success", res.Status, res.Output)
			require.NotContains(t, res.Output, "Tool call limit reached", "call %d", i+1)
			require.Equal(t, 2, strings.Count(res.Output, "No web search provider configured"), res.Output)
			require.Equal(t, 2, res.ToolCallsMade)
			require.Equal(t, i+1, kernelOf(t, res).ExecutionCount)
		}
	})
	t.Run("least recently used kernel is evicted", func(t *testing.T) {
		t.Parallel()
		e := newServeEnv(t, "code_execution:\n  warm_pool: 0\n  max_session_kernels: 2\n")
		p := e.start()
		run := func(session, code string) result {
			return p.exec(t, map[string]any{"code": code, "mode": mode, "session": session})
		}
		for _, s := range []string{"a", "b", "c"} {
			require.Equal(t, "success", run(s, "v = "+strconv.Quote(s)).Status)
		}
		require.Equal(t, "b\n", run("b", "print(v)").Output)
		require.Equal(t, "c\n", run("c", "print(v)").Output)
		res := run("a", "print(v)")
		require.Contains(t, res.Error, "NameError", "a was evicted")
		require.Equal(t, 1, kernelOf(t, res).ExecutionCount)
		require.Contains(t, kernelOf(t, res).Note, "closed to make room for another session's (max_session_kernels is 2)", "the note says why the state is gone")
	})
	t.Run("idle kernels are reaped", func(t *testing.T) {
		t.Parallel()
		e := newServeEnv(t, "code_execution:\n  warm_pool: 0\n  kernel_idle_timeout: 1\n")
		p := e.start("--log-level", "debug")
		run := func(code string) result {
			return p.exec(t, map[string]any{"code": code, "mode": mode, "session": "idle"})
		}
		require.Equal(t, "success", run("w = 1").Status)
		// The reaper says when it closed the kernel: wait for that, not
		// for a time a loaded machine may overrun.
		waitLog(t, p.stderr, `closing the kernel of session "idle"`, 1)
		res := run("print(w)")
		require.Contains(t, res.Error, "NameError")
		require.Equal(t, 1, kernelOf(t, res).ExecutionCount)
		require.Contains(t, kernelOf(t, res).Note, "closed after 1s idle (kernel_idle_timeout)", "the note says why the state is gone")
	})
}

// outputParams are the params of serve's output notifications.
type outputParams struct {
	ID     json.RawMessage `json:"id"`
	Stream string          `json:"stream"`
	Text   string          `json:"text"`
}

// nextOutput waits for the next output notification.
func (c *serveClient) nextOutput(t *testing.T) outputParams {
	t.Helper()
	select {
	case m := <-c.outputs:
		require.Nil(t, m.ID, "a notification has no id")
		var p outputParams
		require.NoError(t, json.Unmarshal(m.Params, &p))
		return p
	case <-time.After(rpcTimeout):
		t.Fatal("no output notification")
	}
	return outputParams{}
}

// TestServeStream: an execute with stream: true gets what the script
// prints as output notifications while it runs, before its response: a
// script printing once a second for 3 s gives at least 3 (each tick's
// notification arrives while the script waits for a delegated tool call
// the test answers only once it has it); the result is the same. Without
// stream, none.
func TestServeStream(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"strict", "project"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			e := newServeEnv(t, defaultServeConfig)
			p := e.start()
			code := "import sys, time\nfrom hermes_tools import web_search\nfor i in range(3):\n    print('tick', i)\n    web_search(str(i))\n    time.sleep(1)\nsys.stderr.write('bye\\n')\nprint('done')\n"
			for _, session := range []string{"", "s"} {
				params := map[string]any{"code": code, "mode": mode, "workdir": e.workdir, "stream": true, "delegate_tools": []string{"web_search"}}
				if session != "" {
					params["session"] = session
				}
				resp := p.start("execute", params)
				var stdout, stderr strings.Builder
				notes := 0
				take := func(n outputParams) {
					notes++
					require.NotEmpty(t, n.Text)
					switch n.Stream {
					case "stdout":
						stdout.WriteString(n.Text)
					case "stderr":
						stderr.WriteString(n.Text)
					default:
						t.Fatalf("output on stream %q", n.Stream)
					}
				}
				var id json.RawMessage
				for i := range 3 {
					for !strings.Contains(stdout.String(), fmt.Sprintf("tick %d\n", i)) {
						n := p.nextOutput(t)
						id = n.ID
						take(n)
					}
					require.GreaterOrEqual(t, notes, i+1)
					tc := p.nextToolCall(t)
					p.respond(tc.ID, map[string]any{"result": map[string]any{"success": true}})
				}
				m := wait(t, resp)
				require.Equal(t, string(m.ID), string(id), "the notifications name the call")
				// The notifications came before the response: the client
				// has read them all.
				for len(p.outputs) > 0 {
					take(p.nextOutput(t))
				}
				res := execResult(t, m)
				require.Equal(t, "success", res.Status, res.Output)
				require.Equal(t, "tick 0\ntick 1\ntick 2\ndone\n", res.Output)
				require.Equal(t, res.Output, stdout.String())
				require.Equal(t, "bye\n", stderr.String())
				require.GreaterOrEqual(t, notes, 3)
			}
			res := p.exec(t, map[string]any{"code": "print('quiet')", "mode": mode, "workdir": e.workdir, "stream": false})
			require.Equal(t, "quiet\n", res.Output)
			require.Empty(t, p.outputs, "no notifications without stream")
			m := p.call(t, "execute", map[string]any{"code": "print(1)", "stream": "yes"})
			require.NotNil(t, m.Error)
			require.Equal(t, "Invalid params: stream must be true or false", m.Error.Message)
		})
	}
}

// ---- Tool delegation: open_session, delegate_tools and tool_call ----

// hostSearch is a client's own web_search: it answers tool_call requests
// by query ("fail": an error reply; "list": a result that is not an
// object; "hang": no answer at all).
func hostSearch(tc toolCallParams) map[string]any {
	var a struct {
		Query string `json:"query"`
	}
	_ = json.Unmarshal(tc.Args, &a)
	switch a.Query {
	case "fail":
		return map[string]any{"error": map[string]any{"code": -32000, "message": "search backend down"}}
	case "list":
		return map[string]any{"result": []int{1, 2}}
	case "hang":
		return nil
	}
	return map[string]any{"result": map[string]any{"success": true, "data": map[string]any{"web": []any{
		map[string]any{"title": "From the host: " + a.Query, "url": "https://example.com/", "description": "", "position": 1, "id": json.Number("9007199254740993")},
	}}}}
}

// drainToolCalls empties the record of tool_call requests and returns how
// many there were.
func (c *serveClient) drainToolCalls() int {
	n := 0
	for {
		select {
		case <-c.toolCalls:
			n++
		default:
			return n
		}
	}
}

func TestServeDelegation(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"strict", "project"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			e := newServeEnv(t, defaultServeConfig)
			p := e.start()
			p.setTool(hostSearch)
			exec := func(session, code string, extra ...any) result {
				t.Helper()
				params := map[string]any{"code": code, "mode": mode, "session": session, "workdir": e.workdir}
				for i := 0; i+1 < len(extra); i += 2 {
					params[extra[i].(string)] = extra[i+1]
				}
				return p.exec(t, params)
			}
			const search = "from hermes_tools import web_search\n"

			// Not delegated: the built-in web_search answers.
			res := exec("s", search+"print(web_search('wasm').get('error'))")
			require.Contains(t, res.Output, "No web search provider configured")
			require.Zero(t, p.toolCalled.Load())

			m := p.call(t, "open_session", map[string]any{"session": "s", "delegate_tools": []string{"web_search", "web_search"}})
			require.Nil(t, m.Error)
			require.JSONEq(t, `{"session": "s", "delegate_tools": ["web_search"]}`, string(m.Result))

			// The client gets the call, with the script's arguments, and its
			// answer reaches the script (numbers exactly as it wrote them).
			res = exec("s", search+"r = web_search('wasm', limit=3)\nprint(r['data']['web'][0]['title'])\nprint(r['data']['web'][0]['id'])\n")
			require.Equal(t, "success", res.Status, res.Output)
			require.Equal(t, "From the host: wasm\n9007199254740993\n", res.Output)
			tc := p.nextToolCall(t)
			require.Equal(t, "web_search", tc.Tool)
			require.JSONEq(t, `{"query": "wasm", "limit": 3}`, string(tc.Args))
			require.Equal(t, "s", tc.Session)
			require.NotEmpty(t, tc.RequestID, "the tool_call names the execute request")
			require.Len(t, res.ToolCalls, 1)
			require.Equal(t, "web_search", res.ToolCalls[0].Tool)
			require.True(t, res.ToolCalls[0].OK)
			require.Equal(t, 2, kernelOf(t, res).ExecutionCount, "the delegation kept the session's kernel")

			// An error reply and a result that is not an object are error
			// dicts for the script, which goes on.
			res = exec("s", search+"print(web_search('fail')['error'])\nprint(web_search('list')['error'])\nprint('after')\n")
			require.Equal(t, "success", res.Status, res.Output)
			require.Equal(t, "Delegated tool web_search failed: the client answered with an error: search backend down\n"+
				"Delegated tool web_search failed: the client's result is not a JSON object\nafter\n", res.Output)
			require.Len(t, res.ToolCalls, 2)
			require.False(t, res.ToolCalls[0].OK)
			require.Equal(t, 3, kernelOf(t, res).ExecutionCount)

			// The budget applies: the third call is refused before the
			// client is asked.
			p.drainToolCalls()
			before := p.toolCalled.Load()
			res = exec("s", search+"for q in ['a', 'b', 'c']:\n    r = web_search(q)\n    print(r.get('error') or r['data']['web'][0]['title'])\n", "max_tool_calls", 2)
			require.Equal(t, "success", res.Status, res.Output)
			require.Equal(t, "From the host: a\nFrom the host: b\nTool call limit reached (2). No more tool calls allowed in this execution.\n", res.Output)
			require.Equal(t, int32(2), p.toolCalled.Load()-before, "the client got only 2 tool_call requests")
			require.Equal(t, 2, res.ToolCallsMade)
			require.Len(t, res.ToolCalls, 2)
			for _, c := range res.ToolCalls {
				require.Equal(t, "web_search", c.Tool)
				require.True(t, c.OK)
			}

			// The whitelist applies: a delegated tool that is not enabled has
			// no function to import, and is never asked for.
			p.drainToolCalls()
			before = p.toolCalled.Load()
			res = exec("s", search+"print(web_search('x').get('error'))", "tools", []string{"read_file"})
			require.Contains(t, res.Output, "ImportError: cannot import name 'web_search' from 'hermes_tools'")
			require.Equal(t, before, p.toolCalled.Load())

			// execute's own delegate_tools overrides the session's.
			res = exec("s", search+"print(web_search('x').get('error'))", "delegate_tools", []string{})
			require.Contains(t, res.Output, "No web search provider configured")
			res = exec("other", search+"print(web_search('direct')['data']['web'][0]['title'])", "delegate_tools", []string{"web_search"})
			require.Equal(t, "From the host: direct\n", res.Output)
			require.Equal(t, "other", p.nextToolCall(t).Session)
			res = exec("other", search+"print(web_search('x').get('error'))")
			require.Contains(t, res.Output, "No web search provider configured", "a call's own delegate_tools is not remembered")

			// close_session forgets the delegation.
			require.JSONEq(t, `{"closed": true}`, string(p.call(t, "close_session", map[string]any{"session": "s"}).Result))
			p.drainToolCalls()
			before = p.toolCalled.Load()
			res = exec("s", search+"print(web_search('wasm').get('error'))")
			require.Contains(t, res.Output, "No web search provider configured")
			require.Equal(t, before, p.toolCalled.Load())

			// So does an empty list.
			p.call(t, "open_session", map[string]any{"session": "e", "delegate_tools": []string{"web_search"}})
			m = p.call(t, "open_session", map[string]any{"session": "e", "delegate_tools": []string{}})
			require.JSONEq(t, `{"session": "e", "delegate_tools": []}`, string(m.Result))
			res = exec("e", search+"print(web_search('wasm').get('error'))")
			require.Contains(t, res.Output, "No web search provider configured")
			require.Equal(t, before, p.toolCalled.Load())
		})
	}
}

// TestServeDelegationWait: a delegated call the client never answers
// ends with the run: on timeout and on interrupt.
func TestServeDelegationWait(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"strict", "project"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			e := newServeEnv(t, defaultServeConfig)
			p := e.start()
			p.setTool(hostSearch)
			code := "from hermes_tools import web_search\nprint(web_search('hang'))\n"
			start := time.Now()
			res := p.exec(t, map[string]any{"code": code, "mode": mode, "session": "t", "timeout": 2, "delegate_tools": []string{"web_search"}})
			require.Equal(t, "timeout", res.Status, res.Output)
			// Ended by the 2 s timeout, not stuck on the call nobody answers
			// (loose for a loaded machine).
			require.Less(t, time.Since(start), 60*time.Second)
			require.Equal(t, "web_search", p.nextToolCall(t).Tool)

			long := p.start("execute", map[string]any{"code": code, "mode": mode, "session": "i", "delegate_tools": []string{"web_search"}})
			p.nextToolCall(t)
			m := p.call(t, "interrupt", map[string]any{"session": "i", "reason": "stop waiting"})
			require.JSONEq(t, `{"interrupted": true}`, string(m.Result))
			select {
			case m := <-long:
				res = execResult(t, m)
			case <-time.After(60 * time.Second):
				t.Fatal("the interrupted call did not answer within 60 s")
			}
			require.Equal(t, "interrupted", res.Status)
			require.True(t, strings.HasSuffix(res.Output, "[execution interrupted — stop waiting]"), res.Output)
		})
	}
}

// TestServeDelegationPerConnection: a delegation belongs to the
// connection that made it; the connection closing fails the calls in
// flight.
func TestServeDelegationPerConnection(t *testing.T) {
	t.Parallel()
	e := newServeEnv(t, defaultServeConfig)
	l, clients, conns := e.tcpClients(t, 2)
	a, b, bConn := clients[0], clients[1], conns[1]
	for _, c := range clients {
		c.setTool(hostSearch)
	}
	require.Nil(t, a.call(t, "open_session", map[string]any{"session": "shared", "delegate_tools": []string{"web_search"}}).Error)
	code := "from hermes_tools import web_search\nr = web_search('q')\nprint(r.get('error') or r['data']['web'][0]['title'])\n"
	res := b.exec(t, map[string]any{"code": code, "mode": "strict", "session": "shared"})
	require.Contains(t, res.Output, "No web search provider configured", "b did not delegate")
	res = a.exec(t, map[string]any{"code": code, "mode": "strict", "session": "shared"})
	require.Equal(t, "From the host: q\n", res.Output)
	require.Zero(t, b.toolCalled.Load())
	require.Equal(t, int32(1), a.toolCalled.Load())

	// b's connection closes while its delegated call waits: the script
	// gets an error dict and ends.
	b.setTool(func(toolCallParams) map[string]any { return nil })
	marker := filepath.Join(e.workdir, "after.txt")
	b.start("execute", map[string]any{"code": "from hermes_tools import web_search, write_file\nr = web_search('hang')\nwrite_file(" + jsonString(marker) + ", r['error'])\n", "mode": "strict", "session": "b", "delegate_tools": []string{"web_search"}})
	b.nextToolCall(t)
	bConn.Close()
	const want = "Delegated tool web_search failed: the client's connection closed before it answered"
	var got []byte
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if got, _ = os.ReadFile(marker); string(got) == want {
			break
		}
	}
	require.Equal(t, want, string(got), "the script goes on after the connection closed, with an error dict")
	require.Nil(t, a.call(t, "shutdown", nil).Error)
	require.Equal(t, 0, l.exitCode(t), l.stderr.String())
}

// ---- Answers to the server's own requests (approve, tool_call) ----

// forgedApproval is what a process that can write into the client's
// stream, but not read it, sends: an approval for an id it guessed.
func forgedApproval(id string) string {
	return `{"jsonrpc":"2.0","id":"` + id + `","result":{"approved":true,"scope":"always"}}`
}

// requestIDBits checks that a server request's id is "srv-" and 128 bits
// in hex, and returns the bits.
func requestIDBits(t *testing.T, raw json.RawMessage) []byte {
	t.Helper()
	var id string
	require.NoError(t, json.Unmarshal(raw, &id), "a server request id is a string: %s", raw)
	require.Regexp(t, `^srv-[0-9a-f]{32}$`, id)
	b, err := hex.DecodeString(strings.TrimPrefix(id, "srv-"))
	require.NoError(t, err)
	require.Len(t, b, 16)
	return b
}

// waitExists waits (a minute at most) for a file a script writes to say
// it runs; why gives the server's output for the failure.
func waitExists(t *testing.T, path string, why func() string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never appeared:\n%s", path, why())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitLog waits for a server's stderr to hold what n times (it is copied
// from the child's pipe by another goroutine: it can lag behind).
func waitLog(t *testing.T, stderr *syncBuffer, what string, n int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for strings.Count(stderr.String(), what) < n {
		if time.Now().After(deadline) {
			t.Fatalf("the server did not log %q %d times:\n%s", what, n, stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitDropped waits for a server's debug log to report n dropped answers
// to its requests.
func waitDropped(t *testing.T, stderr *syncBuffer, n int) {
	t.Helper()
	waitLog(t, stderr, "dropped a response with id", n)
}

// TestServeForgedReplies: an answer to a server request counts only from
// the connection that got the request, only once, only when it is a JSON-RPC
// 2.0 response, and its id cannot be guessed.
func TestServeForgedReplies(t *testing.T) {
	t.Parallel()
	const rmScript = "from hermes_tools import terminal\nr = terminal('rm -rf ./build')\nprint(r.get('error'))\nprint('after')\n"
	start := func(t *testing.T) (*serveEnv, *serveProc) {
		e := newServeEnv(t, defaultServeConfig)
		require.NoError(t, os.MkdirAll(filepath.Join(e.workdir, "build", "obj"), 0o755))
		return e, e.start("--log-level", "debug")
	}
	cli := func(e *serveEnv, session, code string) map[string]any {
		return map[string]any{"code": code, "mode": "strict", "workdir": e.workdir, "session": session, "kind": "cli"}
	}
	buildExists := func(e *serveEnv) bool {
		_, err := os.Stat(filepath.Join(e.workdir, "build"))
		return err == nil
	}
	dropped := func(t *testing.T, p *serveProc, n int) {
		t.Helper()
		waitDropped(t, p.stderr, n)
	}

	t.Run("guessed ids", func(t *testing.T) {
		t.Parallel()
		e, p := start(t)
		// Before the client's own "no", the same stream carries approvals
		// for the ids the server used to hand out (srv-1, srv-2, ...).
		p.setAnswer(func(ap approveParams) map[string]any {
			for i := range 4 {
				p.send(forgedApproval(fmt.Sprintf("srv-%d", i)))
			}
			return denied(ap)
		})
		res := p.exec(t, cli(e, "c", rmScript))
		require.Equal(t, "success", res.Status, res.Output)
		require.Contains(t, res.Output, "Command blocked: `rm -rf ./build` needs approval (recursive delete) and was denied.")
		require.True(t, buildExists(e), "a forged approval must not run the command")
		requestIDBits(t, p.nextAsk(t).ID)
		dropped(t, p, 4)
		// The server goes on: the connection still works.
		require.Equal(t, "ok\n", p.exec(t, map[string]any{"code": "print('ok')", "mode": "strict", "session": "c"}).Output)
	})

	t.Run("ids are 128 random bits", func(t *testing.T) {
		t.Parallel()
		e, p := start(t)
		p.setAnswer(denied)
		two := "from hermes_tools import terminal\nterminal('rm -rf ./build')\nterminal('rm -rf ./build')\n"
		require.Equal(t, "success", p.exec(t, cli(e, "c", two)).Status)
		a, b := requestIDBits(t, p.nextAsk(t).ID), requestIDBits(t, p.nextAsk(t).ID)
		require.NotEqual(t, a, b) // and internal/jsonrpc's TestRequestIDs draws 1000
		require.True(t, buildExists(e))
	})

	t.Run("a second answer is ignored", func(t *testing.T) {
		t.Parallel()
		e, p := start(t)
		// The client says no; an approval with the same id follows.
		p.setAnswer(func(ap approveParams) map[string]any {
			p.respond(ap.ID, denied(ap))
			return approved("always")(ap)
		})
		res := p.exec(t, cli(e, "c", rmScript))
		require.Contains(t, res.Output, "was denied")
		require.True(t, buildExists(e))
		dropped(t, p, 1)
		// Nor does the late approval count for the next request.
		p.setAnswer(denied)
		res = p.exec(t, cli(e, "c", rmScript))
		require.Contains(t, res.Output, "was denied")
		require.True(t, buildExists(e))
		require.Equal(t, int32(2), p.asked.Load())
	})

	t.Run("answers that are not JSON-RPC 2.0 responses", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct{ name, answer, why string }{
			{"no jsonrpc", `{"id":%s,"result":{"approved":true}}`, `"jsonrpc" must be "2.0"`},
			{"jsonrpc 1.0", `{"jsonrpc":"1.0","id":%s,"result":{"approved":true}}`, `"jsonrpc" must be "2.0"`},
			{"result and error", `{"jsonrpc":"2.0","id":%s,"result":{"approved":true},"error":{"code":1,"message":"x"}}`, "both a result and an error"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				e, p := start(t)
				p.setAnswer(func(ap approveParams) map[string]any {
					p.send(fmt.Sprintf(tc.answer, ap.ID))
					return nil
				})
				res := p.exec(t, cli(e, "c", rmScript))
				require.Contains(t, res.Output, "Command blocked: `rm -rf ./build`", "a malformed answer is no approval")
				require.True(t, buildExists(e))
				waitLog(t, p.stderr, tc.why, 1)
			})
		}
	})

	t.Run("tool_call", func(t *testing.T) {
		t.Parallel()
		for _, mode := range []string{"strict", "project"} {
			t.Run(mode, func(t *testing.T) {
				t.Parallel()
				e, p := start(t)
				// Forged results for guessed ids come first, then a second
				// answer with the real id: the script sees only the client's
				// own first answer.
				p.setTool(func(tc toolCallParams) map[string]any {
					for i := range 4 {
						p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":"srv-%d","result":{"success":true,"data":{"web":[{"title":"FORGED"}]}}}`, i))
					}
					p.respond(tc.ID, hostSearch(tc))
					return map[string]any{"result": map[string]any{"success": true, "data": map[string]any{"web": []any{map[string]any{"title": "SECOND"}}}}}
				})
				code := "from hermes_tools import web_search\nprint(web_search('q')['data']['web'][0]['title'])\nprint(web_search('r')['data']['web'][0]['title'])\n"
				res := p.exec(t, map[string]any{"code": code, "mode": mode, "session": "d", "workdir": e.workdir, "delegate_tools": []string{"web_search"}})
				require.Equal(t, "From the host: q\nFrom the host: r\n", res.Output)
				a, b := requestIDBits(t, p.nextToolCall(t).ID), requestIDBits(t, p.nextToolCall(t).ID)
				require.NotEqual(t, a, b)
				dropped(t, p, 10)
			})
		}
	})
}

// ---- Line limits: before and after authenticate ----

// padded pads a request line with spaces to n bytes (its newline not
// counted).
func padded(line string, n int) string {
	return line + strings.Repeat(" ", n-len(line))
}

// TestServeLongLines: once authenticated, a line over the limit gets an
// error that names it, and the next request on the connection is
// answered.
func TestServeLongLines(t *testing.T) {
	t.Parallel()
	e := newServeEnv(t, defaultServeConfig)
	l, clients, conns := e.tcpClients(t, 1)
	c, nc := clients[0], conns[0]
	// Exactly the limit: read.
	m := c.rawCall(t, "1", padded(`{"jsonrpc":"2.0","id":1,"method":"close_session","params":{"session":"s"}}`, maxRPCLine))
	require.JSONEq(t, `{"closed": true}`, string(m.Result))
	// One byte more: an error, the rest of the line is skipped.
	big := make([]byte, maxRPCLine+2)
	for i := range big {
		big[i] = 'x'
	}
	big[len(big)-1] = '\n'
	_, err := nc.Write(big)
	require.NoError(t, err)
	select {
	case m := <-c.other:
		require.Equal(t, "null", string(m.ID))
		require.NotNil(t, m.Error)
		require.Equal(t, -32600, m.Error.Code)
		require.Contains(t, m.Error.Message, "the line is larger than 64 MiB, the limit for one message")
	case <-time.After(rpcTimeout):
		t.Fatal("no error for an over-long line")
	}
	res := c.exec(t, map[string]any{"code": "print('next')", "mode": "project", "session": "s"})
	require.Equal(t, "next\n", res.Output)
	require.Nil(t, c.call(t, "shutdown", nil).Error)
	require.Equal(t, 0, l.exitCode(t), l.stderr.String())
}

// TestServeArgumentErrors: a misdirected execute is answered, as in
// Hermes, with a result whose error is Hermes's message (the model reads
// it), not with a protocol error; nothing runs.
func TestServeArgumentErrors(t *testing.T) {
	t.Parallel()
	e := newServeEnv(t, "code_execution:\n  warm_pool: 0\n  mode: strict\n")
	p := e.start()
	for i, tc := range []struct{ params, mode, msg string }{
		{`{}`, "strict", executor.NoCodeMessage},
		{`null`, "strict", executor.NoCodeMessage},
		{`{"code": "   \n"}`, "strict", executor.NoCodeMessage},
		{`{"code": null, "command": "ls"}`, "strict", executor.NoCodeMessage},
		{`{"code": "", "mode": "project", "session": "s"}`, "project", executor.NoCodeMessage},
		{`{"command": "ls -la"}`, "strict", executor.CommandNotCodeMessage},
		{`{"command": "ls", "mode": "project"}`, "project", executor.CommandNotCodeMessage},
		{`{"code": 42}`, "strict", "execute_code received a int in 'code', but it requires Python source as a string. Retry as execute_code(code=\"...\")."},
		{`{"code": ["print(1)"]}`, "strict", "execute_code received a list in 'code', but it requires Python source as a string. Retry as execute_code(code=\"...\")."},
	} {
		id := strconv.Itoa(200 + i)
		m := p.rawCall(t, id, fmt.Sprintf(`{"jsonrpc": "2.0", "id": %s, "method": "execute", "params": %s}`, id, tc.params))
		require.Nil(t, m.Error, tc.params)
		res := execResult(t, m)
		require.Equal(t, "error", res.Status, tc.params)
		require.Equal(t, tc.msg, res.Error, tc.params)
		require.Equal(t, tc.msg, res.Output, tc.params)
		require.Equal(t, tc.mode, res.Mode, tc.params)
		require.Nil(t, res.Kernel, tc.params)
	}
	// The Hermes texts, verbatim.
	require.Equal(t, "No code provided. execute_code requires a non-empty 'code' parameter containing Python source. To run shell commands, use terminal(command=...) instead.", executor.NoCodeMessage)
	require.Equal(t, "execute_code received a 'command' parameter, but it requires Python source in 'code'. Use terminal(command=...) for shell commands; for Python, retry as execute_code(code=...).", executor.CommandNotCodeMessage)
}

// TestServeDescribe: describe returns Hermes's execute_code schema for the
// server's configuration, a mode and a tool set.
func TestServeDescribe(t *testing.T) {
	t.Parallel()
	e := newServeEnv(t, "code_execution:\n  warm_pool: 0\n  mode: strict\n  timeout: 120\n  max_tool_calls: 9\n")
	p := e.start()
	cfg := config.Default()
	cfg.CodeExecution.Mode = "strict"
	cfg.CodeExecution.Timeout = 120
	cfg.CodeExecution.MaxToolCalls = 9
	for _, tc := range []struct {
		params map[string]any
		mode   string
		tools  []string
	}{
		{nil, "", nil},
		{map[string]any{"mode": "project"}, "project", nil},
		{map[string]any{"enabled_tools": []string{"terminal", "read_file", "vision_analyze"}}, "", []string{"terminal", "read_file"}},
		{map[string]any{"tools": []string{}}, "", []string{}},
	} {
		m := p.call(t, "describe", tc.params)
		require.Nil(t, m.Error)
		want, err := json.Marshal(executor.ExecuteCodeSchema(cfg, tc.mode, tc.tools))
		require.NoError(t, err)
		require.JSONEq(t, string(want), string(m.Result))
	}
	m := p.call(t, "describe", nil)
	var s executor.ToolSchema
	require.NoError(t, json.Unmarshal(m.Result, &s))
	require.Equal(t, "execute_code", s.Name)
	require.Contains(t, s.Description, "Limits: 2-minute timeout, max 9 tool calls per call. Stdout over 50KB shows head/tail inline")
	require.Contains(t, s.Description, "Scripts run in their own temp dir, not the session's CWD, inside a WebAssembly sandbox")
	require.Contains(t, s.Description, "don't wrap a single terminal command in execute_code")
}

// skillProbe prints what the script and a terminal command see of the
// skill variable and of a managed credential.
var skillProbe = `import os, json
from hermes_tools import terminal
print(json.dumps([os.environ.get("SKILL_TOKEN"), os.environ.get("OPENAI_API_KEY"), terminal("` + echoVars(skillProbeVars...) + `")["output"].strip()]))`

// skillProbeVars are the variables skillProbe's terminal command prints.
var skillProbeVars = []string{"SKILL_TOKEN", "OPENAI_API_KEY"}

// TestServeSkills: a skill's variables reach a session through
// register_skill (names, a SKILL.md path or its content), open_session's
// and execute's skill_env; other sessions do not see them, host-managed
// credentials are refused, a running kernel sees them after a reset, and
// close_session forgets them.
func TestServeSkills(t *testing.T) {
	t.Parallel()
	e := newServeEnv(t, defaultServeConfig)
	e.env = append(e.env, "SKILL_TOKEN=tok-1", "OPENAI_API_KEY=sk-host")
	skillDir := filepath.Join(t.TempDir(), "gh-skill")
	require.NoError(t, os.Mkdir(skillDir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(skillDir, "SKILL.md"), []byte("---\nname: gh-skill\nrequired_environment_variables:\n  - name: SKILL_TOKEN\n    prompt: token\n  - OPENAI_API_KEY\n---\n# Use it\n"), 0o600))
	p := e.start()
	for _, mode := range []string{"strict", "project"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			probe := func(session string, extra map[string]any) string {
				t.Helper()
				params := map[string]any{"code": skillProbe, "mode": mode, "session": session + "-" + mode}
				for k, v := range extra {
					params[k] = v
				}
				res := p.exec(t, params)
				require.Equal(t, "success", res.Status, res.Output)
				return strings.TrimSpace(res.Output)
			}
			unset := jsonString(echoedVars(skillProbeVars, nil))
			token := jsonString(echoedVars(skillProbeVars, map[string]string{"SKILL_TOKEN": "tok-1"}))
			none, passed, terminalOnly := `[null, null, `+unset+`]`, `["tok-1", null, `+token+`]`, `[null, null, `+token+`]`
			require.JSONEq(t, none, probe("a", nil))

			m := p.call(t, "register_skill", map[string]any{"session": "a-" + mode, "path": skillDir})
			require.Nil(t, m.Error)
			require.JSONEq(t, `{"session": "a-`+mode+`", "names": ["SKILL_TOKEN", "OPENAI_API_KEY"], "registered": ["SKILL_TOKEN"], "refused": ["OPENAI_API_KEY"]}`, string(m.Result))
			require.JSONEq(t, terminalOnly, probe("a", nil), "the running kernel's scripts: after a reset")
			require.JSONEq(t, passed, probe("a", map[string]any{"reset": true}))
			require.JSONEq(t, none, probe("b", nil), "another session does not see them")

			m = p.call(t, "register_skill", map[string]any{"session": "b-" + mode, "content": "---\nprerequisites:\n  env_vars: [SKILL_TOKEN]\n---\n", "names": []string{"EXTRA_VAR"}})
			require.JSONEq(t, `{"session": "b-`+mode+`", "names": ["EXTRA_VAR", "SKILL_TOKEN"], "registered": ["EXTRA_VAR", "SKILL_TOKEN"], "refused": []}`, string(m.Result))
			require.JSONEq(t, passed, probe("b", map[string]any{"reset": true}))

			m = p.call(t, "open_session", map[string]any{"session": "c-" + mode, "skill_env": []string{"SKILL_TOKEN", "ANTHROPIC_API_KEY"}})
			require.JSONEq(t, `{"session": "c-`+mode+`", "delegate_tools": [], "skill_env": ["SKILL_TOKEN"], "skill_env_refused": ["ANTHROPIC_API_KEY"]}`, string(m.Result))
			require.JSONEq(t, passed, probe("c", nil))

			require.JSONEq(t, passed, probe("d", map[string]any{"skill_env": []string{"SKILL_TOKEN"}}))
			require.JSONEq(t, passed, probe("d", nil), "execute's skill_env stays with its session")

			require.Nil(t, p.call(t, "close_session", map[string]any{"session": "a-" + mode}).Error)
			require.JSONEq(t, none, probe("a", nil), "close_session forgets them")
		})
	}
}

package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/internal/wire"
)

// toolNames is the whitelist: the only tools a script can call. It is
// config's list, which hostfuncs implements (TestToolsImplementNames), so
// the whitelist and the implementations cannot drift, and this layer does
// not import the tools' dependencies.
var toolNames = config.ToolNames

// ToolSet is the tool set of an execution given a list of enabled tool
// names, as Hermes computes it (the session's enabled tools intersected
// with the seven): names that are not one of the seven (vision_analyze,
// delegate_task, browser_navigate, ...) are dropped silently, duplicates
// once, and the result is in toolNames order. nil means every tool: it
// returns all seven. A list with none of the seven gives an empty, non-nil
// set: no tool is enabled. (Hermes falls back to all seven there; a list
// meant to restrict never widens here.)
func ToolSet(names []string) []string {
	if names == nil {
		return slices.Clone(toolNames)
	}
	out := []string{}
	for _, t := range toolNames {
		if slices.Contains(names, t) {
			out = append(out, t)
		}
	}
	return out
}

// toolsEnv is the variable that tells the generated hermes_tools module
// which tools are enabled: their names, comma-separated. The executor sets
// it only when the tool set is not all seven; absent means all seven. It
// shapes only the module (a disabled tool has no function, so importing it
// raises ImportError); the broker enforces the tool set whatever a script
// does with it.
const toolsEnv = "HERMES_RPC_TOOLS"

// ToolsInject is the toolsEnv assignment for the tool set enabled (as
// ToolSet returns it), or "" when it is all seven.
func ToolsInject(enabled []string) string {
	set := ToolSet(enabled)
	if len(set) == len(toolNames) {
		return ""
	}
	return toolsEnv + "=" + strings.Join(set, ",")
}

// ExitReport is what the generated runner tells the host when the script
// ends: how it ended, and for an uncaught exception its type, message and
// traceback.
type ExitReport struct {
	// Kind is "ok", "exit" (sys.exit) or "exception".
	Kind      string `json:"kind"`
	Code      int    `json:"code"`
	Type      string `json:"type"`
	Message   string `json:"message"`
	Traceback string `json:"traceback"`
}

// Broker serves one execution's tool calls: it enforces the whitelist and
// the budget, times and logs every call, and takes the runner's exit
// report. It is safe for concurrent use (project mode serves calls from
// several Python threads at once).
type Broker struct {
	tools   ToolFunc
	enabled []string
	max     int

	mu     sync.Mutex
	made   int
	calls  []ToolCall
	report *ExitReport
	notes  []string
}

// NewBroker returns a broker that runs calls with tools, allows at most
// max calls (the limit of the run) and only the enabled tools (nil: all;
// see ToolSet).
func NewBroker(tools ToolFunc, max int, enabled []string) *Broker {
	if max < 0 {
		max = 0
	}
	return &Broker{tools: tools, max: max, enabled: ToolSet(enabled)}
}

// Enabled returns the broker's tool set, in toolNames order.
func (b *Broker) Enabled() []string { return slices.Clone(b.enabled) }

// wireRequest is one line the script sends: a tool call, or the runner's
// exit report when Op is "exit".
type wireRequest struct {
	Token string          `json:"token"`
	Op    string          `json:"op"`
	Tool  string          `json:"tool"`
	Args  json.RawMessage `json:"args"`
	Exit  *ExitReport     `json:"exit"`
	// Note is a fact the script reports for the result, with Op "note":
	// NoteListedPrivateDir.
	Note string `json:"note"`
	// Calls are the tool calls of Op "batch", run concurrently.
	Calls []wireCall `json:"calls"`
	// Open are the descriptors a kernel holds open, with Op "fds" (the
	// answer to Dispatcher.Probe), and Offsets their offsets (-1: none,
	// such as a directory's).
	Open    []int   `json:"open"`
	Offsets []int64 `json:"offsets"`
	// Error is why a file did not reopen, with Op "reopened" (the answer
	// to Dispatcher.Reopen).
	Error string `json:"error"`
}

// wireCall is one tool call of a batch.
type wireCall struct {
	Tool string          `json:"tool"`
	Args json.RawMessage `json:"args"`
}

// MaxBatch bounds the tool calls of one batch request, and batchWorkers
// how many of them run at once: the WASI interpreter's thread pools send
// the calls their tasks make directly (pool.map(web_extract, urls)) as one
// batch (see wasi_compat.py), which the host runs concurrently, as a
// native python's threads would run them.
const (
	MaxBatch     = 256
	batchWorkers = 8
)

// NoteListedPrivateDir is the note of a strict-mode script that listed its
// private dir's root (os.listdir, os.walk, glob or pathlib over "."): the
// result then says that the working dir's files are not there.
const NoteListedPrivateDir = "listed_private_dir"

// Serve handles one request line from the script and returns the response
// line (JSON, newline-terminated). A malformed request gets an error
// response, never a panic or silence.
func (b *Broker) Serve(ctx context.Context, line []byte) []byte {
	return b.serve(ctx, line, nil)
}

// ServeToken is Serve for a channel other processes could reach: the
// request must carry token (compared in constant time), or it gets an
// error response and nothing runs.
func (b *Broker) ServeToken(ctx context.Context, line []byte, token []byte) []byte {
	return b.serve(ctx, line, token)
}

// MaxRequest bounds one tool request line from a script, in both modes
// (the strict host call and the project socket).
const MaxRequest = 64 << 20

// TooLargeReply answers a tool request line over MaxRequest (with its
// newline).
var TooLargeReply = fmt.Sprintf(`{"error": "Tool request too large (over %d MiB)."}`, MaxRequest>>20) + "\n"

// ErrUnauthorized is the error of a request whose token does not match.
const ErrUnauthorized = "Unauthorized: the request does not carry this execution's HERMES_RPC_TOKEN."

func (b *Broker) serve(ctx context.Context, line []byte, token []byte) []byte {
	req, errResp := decodeRequest(line, token)
	if errResp != nil {
		return errResp
	}
	return b.handle(ctx, req)
}

// decodeRequest decodes a request line and checks its token (when token is
// non-nil, in constant time). On failure it returns the error response.
func decodeRequest(line []byte, token []byte) (*wireRequest, []byte) {
	var req wireRequest
	if err := json.Unmarshal(line, &req); err != nil {
		return nil, encodeResponse(map[string]any{"error": "Malformed tool request: " + err.Error()})
	}
	if token != nil && !wire.TokenEqual(req.Token, token) {
		return nil, encodeResponse(map[string]any{"error": ErrUnauthorized})
	}
	return &req, nil
}

// handle answers a decoded, authorized request: the runner's exit report or
// a tool call.
func (b *Broker) handle(ctx context.Context, req *wireRequest) []byte {
	if req.Op == "exit" {
		if req.Exit != nil {
			b.mu.Lock()
			r := *req.Exit
			b.report = &r
			b.mu.Unlock()
		}
		return encodeResponse(map[string]any{"ok": true})
	}
	if req.Op == "batch" {
		return encodeResponse(map[string]any{"results": b.batch(ctx, req.Calls)})
	}
	if req.Op == "note" {
		b.mu.Lock()
		if req.Note == NoteListedPrivateDir && !slices.Contains(b.notes, req.Note) {
			b.notes = append(b.notes, req.Note)
		}
		b.mu.Unlock()
		return encodeResponse(map[string]any{"ok": true})
	}
	return encodeResponse(b.Call(ctx, req.Tool, req.Args))
}

// batch runs calls concurrently (batchWorkers at a time), each through
// Call, and returns their results in the order of calls. A batch over
// MaxBatch calls gets an error for each call.
func (b *Broker) batch(ctx context.Context, calls []wireCall) []map[string]any {
	out := make([]map[string]any, len(calls))
	if len(calls) > MaxBatch {
		for i := range out {
			out[i] = map[string]any{"error": fmt.Sprintf("Tool batch too large (%d calls; at most %d).", len(calls), MaxBatch)}
		}
		return out
	}
	sem := make(chan struct{}, batchWorkers)
	var wg sync.WaitGroup
	for i, c := range calls {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			out[i] = b.Call(ctx, c.Tool, c.Args)
		}()
	}
	wg.Wait()
	return out
}

// Call runs one tool call through the whitelist and the budget.
func (b *Broker) Call(ctx context.Context, tool string, args json.RawMessage) map[string]any {
	if !slices.Contains(b.enabled, tool) {
		return map[string]any{"error": notAvailableMessage(tool, b.enabled)}
	}
	b.mu.Lock()
	if b.made >= b.max {
		b.mu.Unlock()
		return map[string]any{"error": fmt.Sprintf("Tool call limit reached (%d). No more tool calls allowed in this execution.", b.max)}
	}
	b.made++
	b.mu.Unlock()

	start := time.Now()
	res := b.safeCall(ctx, tool, args)
	entry := ToolCall{Tool: tool, DurationMS: float64(time.Since(start).Microseconds()) / 1000, OK: resultOK(res)}
	b.mu.Lock()
	b.calls = append(b.calls, entry)
	b.mu.Unlock()
	return res
}

// notAvailableMessage is the error of a call to a tool outside the
// execution's tool set (an unknown tool, or one of the seven that is not
// enabled), Hermes's text: "Tool '<tool>' is not available in
// execute_code. Available: <the enabled tools, sorted>".
func notAvailableMessage(tool string, enabled []string) string {
	return fmt.Sprintf("Tool '%s' is not available in execute_code. Available: %s", tool, availableList(enabled))
}

// safeCall turns a handler panic into an error result so one broken tool
// cannot take the host down.
func (b *Broker) safeCall(ctx context.Context, tool string, args json.RawMessage) (res map[string]any) {
	defer func() {
		if r := recover(); r != nil {
			res = map[string]any{"error": fmt.Sprintf("Tool %s failed internally: %v", tool, r)}
		}
	}()
	res = b.tools(ctx, tool, args)
	if res == nil {
		res = map[string]any{"error": fmt.Sprintf("Tool %s returned no result", tool)}
	}
	return res
}

// resultOK reports whether a tool result is a success: no non-null "error"
// key and no "success": false.
func resultOK(res map[string]any) bool {
	if e, ok := res["error"]; ok && e != nil && e != "" {
		return false
	}
	if s, ok := res["success"].(bool); ok && !s {
		return false
	}
	return true
}

// Made returns how many calls ran and their log.
func (b *Broker) Made() (int, []ToolCall) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.made, append([]ToolCall{}, b.calls...)
}

// Report returns the runner's exit report, or nil when the script ended
// without one (killed, crashed, os._exit).
// Notes returns the notes the script sent (see NoteListedPrivateDir).
func (b *Broker) Notes() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.notes)
}

func (b *Broker) Report() *ExitReport {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.report
}

func encodeResponse(v map[string]any) []byte {
	out, err := json.Marshal(v)
	if err != nil {
		out, _ = json.Marshal(map[string]any{"error": "Tool result could not be encoded: " + err.Error()})
	}
	return append(out, '\n')
}

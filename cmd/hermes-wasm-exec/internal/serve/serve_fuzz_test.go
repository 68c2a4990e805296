package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hermes-agent/hermes-wasm-exec/cmd/hermes-wasm-exec/internal/jsonrpc"
	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/runtime/executor"
)

// fakeBackend stands in for the executor where only the protocol matters:
// execute answers at once, echoing the code. The code "approve" asks the
// client for an approval and "tool" calls every delegated tool, each
// waiting for an answer no longer than 20 ms.
type fakeBackend struct{}

func (f fakeBackend) Start(ctx context.Context, req executor.Request) pending {
	return fakeCall{func() (executor.Result, error) { return f.execute(ctx, req) }}
}

// fakeCall runs the fake's execute when waited for.
type fakeCall struct {
	run func() (executor.Result, error)
}

func (c fakeCall) Wait() (executor.Result, error) { return c.run() }

func (fakeBackend) execute(ctx context.Context, req executor.Request) (executor.Result, error) {
	res := executor.Result{Status: "success", Output: req.Code, ToolCalls: []executor.ToolCall{}, Mode: req.Mode}
	actx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	switch req.Code {
	case "approve":
		d, err := req.Approver.Approve(actx, executor.ApprovalRequest{Type: config.ApproveCommand, Session: req.Session, Command: "rm -rf x", Reason: "recursive delete"})
		res.Output = fmt.Sprintf("approved=%v error=%v", d.Approved, err != nil)
	case "tool":
		for name, h := range req.ToolHandlers {
			out, _ := json.Marshal(h(actx, json.RawMessage(`{"query":"q"}`)))
			res.Output += name + ": " + string(out) + "\n"
		}
	}
	return res, nil
}

func (fakeBackend) Interrupt(string, string) bool { return false }

func (fakeBackend) CloseSession(context.Context, string)                     {}
func (fakeBackend) ForkSession(context.Context, string, string) (int, error) { return 0, nil }

func (fakeBackend) RegisterSessionSkillEnv(string, ...string) ([]string, error) { return nil, nil }

func (fakeBackend) OpenSession(string, executor.SessionOptions) error { return nil }

func (fakeBackend) DelegatedTools(string, string) []string { return nil }

func (fakeBackend) ForgetClient(string) {}

// fuzzLineLimit is the authenticated line limit of the fuzzed connections,
// low so that over-long lines are reached.
const fuzzLineLimit = 256

// FuzzServeFraming feeds arbitrary bytes to one connection, with or
// without authentication required: the server never panics, ends when its
// input does, and writes only JSON-RPC 2.0 objects, one per line.
func FuzzServeFraming(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"execute","params":{"code":"print(1)","session":"s"}}`,
		`{"jsonrpc":"2.0","id":"a","method":"execute","params":{"code":"approve","kind":"cli"}}`,
		`{"jsonrpc":"2.0","id":2,"method":"open_session","params":{"session":"default","delegate_tools":["web_search"]}}` + "\n" +
			`{"jsonrpc":"2.0","id":3,"method":"execute","params":{"code":"tool"}}`,
		`{"jsonrpc":"2.0","id":4,"method":"interrupt","params":{"session":"s","reason":"r"}}`,
		`{"jsonrpc":"2.0","id":5,"method":"close_session","params":{"session":"s"}}`,
		`{"jsonrpc":"2.0","id":6,"method":"fork_session","params":{"from":"s","to":"t"}}`,
		`{"jsonrpc":"2.0","id":6,"method":"authenticate","params":{"token":"tok"}}` + "\n" +
			`{"jsonrpc":"2.0","id":7,"method":"execute","params":{"code":"x"}}`,
		`{"jsonrpc":"2.0","id":8,"method":"authenticate","params":{"token":"bad"}}`,
		`{"jsonrpc":"2.0","id":"srv-1","result":{"approved":true}}`,
		`{"jsonrpc":"2.0","id":"srv-00000000000000000000000000000000","error":{"code":1,"message":"no"}}`,
		`{"jsonrpc":"2.0","method":"shutdown"}`,
		`{"jsonrpc":"2.0","id":null,"method":"nope"}`,
		`{"jsonrpc":"2.0","id":10,"method":"register_skill","params":{"session":"s","names":["A_KEY"],"content":"---\nrequired_environment_variables: [B]\n---\n"}}`,
		`{"jsonrpc":"2.0","id":11,"method":"describe","params":{"mode":"strict","enabled_tools":["terminal","vision_analyze"]}}`,
		`{"jsonrpc":"2.0","id":12,"method":"execute","params":{"command":"ls"}}`,
		`{"jsonrpc":"2.0","id":13,"method":"execute","params":{"code":[1,2],"skill_env":["X"]}}`,
		`{"jsonrpc":"2.0","id":14,"method":"open_session","params":{"session":"s","skill_env":["X"]}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"execute"}]`,
		"not json\n\n   \r\n{\"jsonrpc\": \"2.0\"",
		strings.Repeat("x", fuzzLineLimit+1) + "\n" + `{"jsonrpc":"2.0","id":9,"method":"close_session","params":{"session":"s"}}`,
		strings.Repeat(" ", jsonrpc.MaxUnauthenticatedLine+10),
	} {
		f.Add([]byte(seed), false)
		f.Add([]byte(seed), true)
	}
	f.Fuzz(func(t *testing.T, data []byte, needAuth bool) {
		nop := func(string, ...any) {}
		s := newServer(fakeBackend{}, nop, nop)
		defer s.cancel(nil)
		s.token = "tok"
		s.maxLine = fuzzLineLimit
		var out bytes.Buffer
		c := s.newClient(bytes.NewReader(data), &out, nil, needAuth)
		done := make(chan struct{})
		go func() {
			c.serve()
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatalf("serve did not end with its input")
		}
		text := out.String()
		if text != "" && !strings.HasSuffix(text, "\n") {
			t.Fatalf("output does not end with a newline: %q", text)
		}
		for line := range strings.Lines(text) {
			var m map[string]json.RawMessage
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatalf("output line is not a JSON object: %q: %v", line, err)
			}
			if string(m["jsonrpc"]) != `"2.0"` {
				t.Fatalf("output line is not JSON-RPC 2.0: %q", line)
			}
			if _, ok := m["id"]; !ok {
				t.Fatalf("output line has no id: %q", line)
			}
			_, isRequest := m["method"]
			_, hasResult := m["result"]
			_, hasError := m["error"]
			if isRequest == (hasResult || hasError) || hasResult && hasError {
				t.Fatalf("output line is neither a request nor a response: %q", line)
			}
		}
	})
}

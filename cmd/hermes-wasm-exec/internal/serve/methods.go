package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/hermes-agent/hermes-wasm-exec/cmd/hermes-wasm-exec/internal/jsonrpc"
	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/runtime/executor"
)

// execute starts a script for request id, which runs once its session's
// earlier calls are done (the executor's queue, in the order of these
// starts); this connection approves what needs approval, and runs the
// delegated tools: the call's own delegate_tools (override, when not nil),
// else those it registered for the session (open_session), which the
// executor takes as the call arrives. With stream, what the script prints
// goes to the client as output notifications while it runs, all of them
// before the response. The returned function waits for the result.
func (c *client) execute(id json.RawMessage, req executor.Request, override []string, stream bool) func() (any, *jsonrpc.Error) {
	req.Approver = executor.ApproverFunc(func(ctx context.Context, ar executor.ApprovalRequest) (executor.Decision, error) {
		return c.approve(ctx, id, ar)
	})
	req.Client, req.Tag = c.id, id
	if override != nil {
		req.ToolHandlers = make(map[string]executor.ToolHandler, len(override))
		for _, tool := range override {
			req.ToolHandlers[tool] = func(ctx context.Context, args json.RawMessage) map[string]any {
				return c.toolCall(ctx, executor.DelegatedCall{Session: req.Session, Tool: tool, Args: args, Tag: id})
			}
		}
	}
	if stream {
		// The executor calls this from one goroutine, and never after the
		// call's result, which is answered after Wait: the notifications
		// come in order, before the response.
		req.Output = func(stream string, chunk []byte) {
			c.conn.Notify("output", outputParams{ID: jsonrpc.IDOrNull(id), Stream: stream, Text: string(chunk)})
		}
	}
	ctx, cancel := context.WithCancelCause(c.s.ctx)
	start := time.Now()
	call := c.s.ex.Start(ctx, req)
	return func() (any, *jsonrpc.Error) {
		defer cancel(nil)
		res, err := call.Wait()
		if err != nil {
			c.s.logf("serve: execute id=%s: %v", jsonrpc.IDOrNull(id), err)
		}
		c.s.logf("serve: -> execute id=%s session=%s status=%s in %v", jsonrpc.IDOrNull(id), req.Session, res.Status, time.Since(start).Round(time.Millisecond))
		return res, nil
	}
}

// outputParams are the params of an output notification: a chunk of what
// the script of execute request id printed on stream ("stdout" or
// "stderr").
type outputParams struct {
	ID     json.RawMessage `json:"id"`
	Stream string          `json:"stream"`
	Text   string          `json:"text"`
}

func (c *client) interrupt(params json.RawMessage) (any, *jsonrpc.Error) {
	p, rerr := jsonrpc.ParamsObject(params, "session", "reason")
	if rerr != nil {
		return nil, rerr
	}
	session, rerr := sessionParam(p, true)
	if rerr != nil {
		return nil, rerr
	}
	reason, rerr := stringParam(p, "reason", false)
	if rerr != nil {
		return nil, rerr
	}
	// The executor interrupts the call holding the session's turn, whether
	// it runs, waits for an approval or for its interpreter to start.
	return map[string]bool{"interrupted": c.s.ex.Interrupt(session, reason)}, nil
}

func (c *client) closeSession(params json.RawMessage) (any, *jsonrpc.Error) {
	p, rerr := jsonrpc.ParamsObject(params, "session")
	if rerr != nil {
		return nil, rerr
	}
	session, rerr := sessionParam(p, true)
	if rerr != nil {
		return nil, rerr
	}
	// The session is gone for every client: so are their delegations.
	c.s.ex.CloseSession(c.s.ctx, session)
	return map[string]bool{"closed": true}, nil
}

// forkSession starts session to from a copy of session from's kernels
// (Executor.ForkSession): to's next call finds from's variables.
func (c *client) forkSession(params json.RawMessage) (any, *jsonrpc.Error) {
	p, rerr := jsonrpc.ParamsObject(params, "from", "to")
	if rerr != nil {
		return nil, rerr
	}
	var from, to string
	if from, rerr = stringParam(p, "from", true); rerr != nil {
		return nil, rerr
	}
	if to, rerr = stringParam(p, "to", true); rerr != nil {
		return nil, rerr
	}
	n, err := c.s.ex.ForkSession(c.s.ctx, from, to)
	if err != nil {
		return nil, jsonrpc.InvalidParams("%s", err.Error())
	}
	return map[string]any{"forked": n, "from": from, "to": to}, nil
}

// openSession registers on the executor's session the tools this
// connection runs itself: its later execute calls send their calls of those tools back
// as tool_call requests. An empty list ends the delegation. skill_env
// registers skill variables for the session (as register_skill names); a
// call with skill_env and no delegate_tools leaves the delegation as it is.
func (c *client) openSession(params json.RawMessage) (any, *jsonrpc.Error) {
	p, rerr := jsonrpc.ParamsObject(params, "session", "delegate_tools", "skill_env")
	if rerr != nil {
		return nil, rerr
	}
	session, rerr := sessionOrDefault(p)
	if rerr != nil {
		return nil, rerr
	}
	tools, rerr := toolListParam(p, "delegate_tools")
	if rerr != nil {
		return nil, rerr
	}
	names, rerr := namesParam(p, "skill_env")
	if rerr != nil {
		return nil, rerr
	}
	// A call that only registers skill variables leaves the delegation as
	// it is: without delegate_tools, it would otherwise end it, and the
	// tools the client runs itself (in its own sandbox, say) would run here.
	keep := tools == nil && names != nil
	if tools == nil {
		tools = []string{}
	}
	var refused []string
	if names != nil {
		var err error
		if refused, err = c.s.ex.RegisterSessionSkillEnv(session, names...); err != nil {
			return nil, jsonrpc.InvalidParams("%v", err)
		}
	}
	if keep {
		tools = nonNil(c.s.ex.DelegatedTools(session, c.id))
	} else if err := c.s.ex.OpenSession(session, executor.SessionOptions{Client: c.id, Delegate: tools, Run: c.toolCall}); err != nil {
		return nil, jsonrpc.InvalidParams("%v", err)
	}
	result := map[string]any{"session": session, "delegate_tools": tools}
	if names != nil {
		result["skill_env"] = withoutNames(names, refused)
		result["skill_env_refused"] = nonNil(refused)
	}
	if !keep {
		c.s.logf("serve: session %s delegates %v to its client", session, tools)
	}
	return result, nil
}

// registerSkill registers for a session the environment variables a skill
// declares (required_environment_variables in its SKILL.md frontmatter):
// given as names, as the path of a SKILL.md (or of the skill's directory)
// the server reads, or as the SKILL.md's content. Host-managed credentials
// are refused. The session's running kernel sees them after a reset.
func (c *client) registerSkill(params json.RawMessage) (any, *jsonrpc.Error) {
	p, rerr := jsonrpc.ParamsObject(params, "session", "names", "path", "content")
	if rerr != nil {
		return nil, rerr
	}
	session, rerr := sessionOrDefault(p)
	if rerr != nil {
		return nil, rerr
	}
	names, rerr := namesParam(p, "names")
	if rerr != nil {
		return nil, rerr
	}
	path, rerr := stringParam(p, "path", false)
	if rerr != nil {
		return nil, rerr
	}
	content, rerr := stringParam(p, "content", false)
	if rerr != nil {
		return nil, rerr
	}
	_, hasPath := p["path"]
	_, hasContent := p["content"]
	if names == nil && !hasPath && !hasContent {
		return nil, jsonrpc.InvalidParams("give the skill's variables: names (a list), path (its SKILL.md or directory) or content (its SKILL.md text)")
	}
	declared := slices.Clone(names)
	if hasPath {
		more, err := executor.ParseSkillFile(path)
		if err != nil {
			return nil, jsonrpc.InvalidParams("path: %v", err)
		}
		declared = append(declared, more...)
	}
	if hasContent {
		more, err := executor.SkillEnvFromMarkdown(content)
		if err != nil {
			return nil, jsonrpc.InvalidParams("content: %v", err)
		}
		declared = append(declared, more...)
	}
	declared = withoutNames(declared, nil) // once each, in order
	refused, err := c.s.ex.RegisterSessionSkillEnv(session, declared...)
	if err != nil {
		return nil, jsonrpc.InvalidParams("%v", err)
	}
	c.s.logf("serve: session %s: skill variables %v registered, %v refused", session, withoutNames(declared, refused), refused)
	return map[string]any{
		"session":    session,
		"names":      declared,
		"registered": withoutNames(declared, refused),
		"refused":    nonNil(refused),
	}, nil
}

// describe returns the execute_code tool for a model, as Hermes's
// build_execute_code_schema builds it ({"name", "description",
// "parameters"}), for the mode ("" = configured) and enabled tools (all
// seven when absent) given.
func (c *client) describe(params json.RawMessage) (any, *jsonrpc.Error) {
	p, rerr := jsonrpc.ParamsObject(params, "mode", "tools", "enabled_tools")
	if rerr != nil {
		return nil, rerr
	}
	mode, rerr := stringParam(p, "mode", false)
	if rerr != nil {
		return nil, rerr
	}
	if mode != "" {
		if _, ok := config.NormalizeMode(mode); !ok {
			return nil, jsonrpc.InvalidParams("mode must be \"strict\" or \"project\", not %q%s", mode, config.DidYouMeanMode(mode))
		}
	}
	tools, rerr := toolsParam(p)
	if rerr != nil {
		return nil, rerr
	}
	return executor.ExecuteCodeSchema(c.s.cfg, mode, tools), nil
}

// withoutNames is names less those in drop, never nil.
func withoutNames(names, drop []string) []string {
	out := []string{}
	for _, n := range names {
		if !slices.Contains(drop, n) && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// nonNil is s, or an empty list for nil (JSON [] rather than null).
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// approve asks this connection's client to approve ar for the execute
// request id, and waits for its answer (until ctx is done, which the
// executor's approval timeout ensures). An error answer, a malformed
// result or a closed connection mean no approval.
func (c *client) approve(ctx context.Context, id json.RawMessage, ar executor.ApprovalRequest) (executor.Decision, error) {
	params := map[string]any{"type": ar.Type, "session": ar.Session}
	if ar.Type == config.ApproveScript {
		params["code"] = ar.Code
	} else {
		params["command"] = ar.Command
	}
	if ar.Reason != "" {
		params["reason"] = ar.Reason
	}
	result, err := c.request(ctx, "approve", id, params, ar.Type)
	if err != nil {
		return executor.Decision{}, err
	}
	var d struct {
		Approved *bool  `json:"approved"`
		Scope    string `json:"scope"`
	}
	if json.Unmarshal(result, &d) != nil || d.Approved == nil {
		return executor.Decision{}, errors.New(`the client's answer is not {"approved": true|false, "scope": ...}`)
	}
	switch d.Scope {
	case "", config.ScopeOnce, config.ScopeSession, config.ScopeAlways:
	default:
		return executor.Decision{}, fmt.Errorf("the client's answer has an unknown scope %q (once, session or always)", d.Scope)
	}
	return executor.Decision{Approved: *d.Approved, Scope: d.Scope}, nil
}

// toolCall runs a call of a delegated tool: it asks this connection's
// client with a tool_call request for the execute request whose id is the
// call's tag, and waits
// for its answer until ctx (the script's run) is done. The client's result
// object is the tool's result; an error answer, another result or a
// closed connection are an error result the script sees.
func (c *client) toolCall(ctx context.Context, call executor.DelegatedCall) map[string]any {
	tool, args := call.Tool, call.Args
	id, _ := call.Tag.(json.RawMessage)
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage("{}")
	}
	params := map[string]any{"tool": tool, "args": args, "session": call.Session}
	fail := func(err error) map[string]any {
		return map[string]any{"error": fmt.Sprintf("Delegated tool %s failed: %v", tool, err)}
	}
	result, err := c.request(ctx, "tool_call", id, params, tool)
	if err != nil {
		return fail(err)
	}
	// Numbers stay as the client wrote them (no float64 rounding).
	dec := json.NewDecoder(bytes.NewReader(result))
	dec.UseNumber()
	var res map[string]any
	if err := dec.Decode(&res); err != nil || res == nil {
		return fail(errors.New("the client's result is not a JSON object"))
	}
	return res
}

// request sends the client a request (approve, tool_call) for the execute
// request id (its params get "request_id" unless the execute was a
// notification), and waits for its answer until ctx is done. An error
// answer and a closed connection are errors. what names the request in
// the debug log.
func (c *client) request(ctx context.Context, method string, id json.RawMessage, params map[string]any, what string) (json.RawMessage, error) {
	if id != nil {
		params["request_id"] = id
	}
	out, err := c.conn.Send(method, params)
	if err != nil {
		return nil, err
	}
	c.s.logf("serve: -> %s %s (%s) for request %s", method, jsonrpc.LogID(out.ID), what, jsonrpc.IDOrNull(id))
	return out.Wait(ctx)
}

package serve

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hermes-agent/hermes-wasm-exec/cmd/hermes-wasm-exec/internal/cli"
	"github.com/hermes-agent/hermes-wasm-exec/cmd/hermes-wasm-exec/internal/jsonrpc"
	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/hostfuncs"
	"github.com/hermes-agent/hermes-wasm-exec/runtime/executor"
)

func stringParam(p map[string]json.RawMessage, name string, required bool) (string, *jsonrpc.Error) {
	raw, ok := p[name]
	if !ok {
		if required {
			return "", jsonrpc.InvalidParams("%s is required", name)
		}
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", jsonrpc.InvalidParams("%s must be a string", name)
	}
	return s, nil
}

func sessionParam(p map[string]json.RawMessage, required bool) (string, *jsonrpc.Error) {
	s, rerr := stringParam(p, "session", required)
	if rerr != nil {
		return "", rerr
	}
	if _, given := p["session"]; given && strings.TrimSpace(s) == "" {
		return "", jsonrpc.InvalidParams("session must be a non-empty string")
	}
	return s, nil
}

// sessionOrDefault is the optional session parameter of the session
// methods (open_session, register_skill): "default" when absent.
func sessionOrDefault(p map[string]json.RawMessage) (string, *jsonrpc.Error) {
	s, rerr := sessionParam(p, false)
	if s == "" && rerr == nil {
		s = "default"
	}
	return s, rerr
}

// executeParams are execute's parameters. command is not one: it is
// accepted only to answer a terminal call sent to execute_code with
// Hermes's message (executor.CommandNotCodeMessage).
var executeParams = []string{"code", "session", "mode", "sandbox", "workdir", "reset", "parent_session", "inherit_parent", "kind", "tools", "enabled_tools", "timeout", "max_tool_calls", "delegate_tools", "skill_env", "stream", "command"}

// toolListParam decodes a list of tool names: as in Hermes, names that are
// not one of the seven (vision_analyze, delegate_task, ...) are dropped
// silently, and so are duplicates. nil when the parameter is absent.
func toolListParam(p map[string]json.RawMessage, name string) ([]string, *jsonrpc.Error) {
	raw, ok := p[name]
	if !ok {
		return nil, nil
	}
	var tools []string
	if json.Unmarshal(raw, &tools) != nil {
		return nil, jsonrpc.InvalidParams("%s must be a list of tool names (%s)", name, strings.Join(hostfuncs.Names, ", "))
	}
	out := []string{}
	for _, t := range tools {
		if slices.Contains(hostfuncs.Names, t) && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out, nil
}

// toolsParam decodes the enabled tools, "tools" or its Hermes spelling
// "enabled_tools" (not both).
func toolsParam(p map[string]json.RawMessage) ([]string, *jsonrpc.Error) {
	_, hasTools := p["tools"]
	if _, hasEnabled := p["enabled_tools"]; hasEnabled {
		if hasTools {
			return nil, jsonrpc.InvalidParams("give tools or enabled_tools, not both (they are the same parameter)")
		}
		return toolListParam(p, "enabled_tools")
	}
	return toolListParam(p, "tools")
}

// namesParam decodes a list of environment variable names; nil when the
// parameter is absent.
func namesParam(p map[string]json.RawMessage, name string) ([]string, *jsonrpc.Error) {
	raw, ok := p[name]
	if !ok {
		return nil, nil
	}
	var names []string
	if json.Unmarshal(raw, &names) != nil {
		return nil, jsonrpc.InvalidParams("%s must be a list of environment variable names", name)
	}
	return names, nil
}

// executeRequest turns execute's params into an executor request, and
// returns the call's own delegate_tools (nil when not given) and whether
// it asked for its output live (stream). problem is
// Hermes's message for a misdirected call (a command instead of code, a
// code that is not a string): the call is then answered with it.
func executeRequest(params json.RawMessage) (req executor.Request, delegate []string, stream bool, problem string, rerr *jsonrpc.Error) {
	p, rerr := jsonrpc.ParamsObject(params, executeParams...)
	if rerr != nil {
		return req, nil, false, "", rerr
	}
	// Hermes looks at the arguments as sent, nulls included.
	raw := map[string]json.RawMessage{}
	_ = json.Unmarshal(params, &raw)
	if req.Code, problem = executor.CodeArgument(raw); problem != "" {
		req.Mode, _ = stringParam(p, "mode", false)
		return req, nil, false, problem, nil
	}
	if req, rerr = executeParamsRequest(p, req.Code); rerr != nil {
		return req, nil, false, "", rerr
	}
	if raw, ok := p["stream"]; ok {
		if json.Unmarshal(raw, &stream) != nil {
			return req, nil, false, "", jsonrpc.InvalidParams("stream must be true or false")
		}
	}
	delegate, rerr = toolListParam(p, "delegate_tools")
	return req, delegate, stream, "", rerr
}

func executeParamsRequest(p map[string]json.RawMessage, code string) (executor.Request, *jsonrpc.Error) {
	req := executor.Request{Code: code}
	var rerr *jsonrpc.Error
	if len(req.Code) > cli.MaxScript {
		return req, jsonrpc.InvalidParams("code is larger than %d MiB", cli.MaxScript>>20)
	}
	req.Code = strings.TrimPrefix(req.Code, "\ufeff")
	if req.Session, rerr = sessionParam(p, false); rerr != nil {
		return req, rerr
	}
	if req.Session == "" {
		req.Session = "default"
	}
	if req.Mode, rerr = stringParam(p, "mode", false); rerr != nil {
		return req, rerr
	}
	if req.Mode != "" {
		mode, ok := config.NormalizeMode(req.Mode)
		if !ok {
			return req, jsonrpc.InvalidParams("mode must be \"strict\" or \"project\", not %q%s", req.Mode, config.DidYouMeanMode(req.Mode))
		}
		req.Mode = mode
	}
	if req.Sandbox, rerr = stringParam(p, "sandbox", false); rerr != nil {
		return req, rerr
	}
	if req.Sandbox != "" {
		sb, ok := config.NormalizeSandbox(req.Sandbox)
		if !ok {
			return req, jsonrpc.InvalidParams("sandbox must be \"none\" or \"wasm\", not %q", req.Sandbox)
		}
		req.Sandbox = sb
	}
	if req.Workdir, rerr = stringParam(p, "workdir", false); rerr != nil {
		return req, rerr
	}
	if raw, ok := p["reset"]; ok {
		if json.Unmarshal(raw, &req.Reset) != nil {
			return req, jsonrpc.InvalidParams("reset must be true or false")
		}
	}
	if req.ParentSession, rerr = stringParam(p, "parent_session", false); rerr != nil {
		return req, rerr
	}
	if raw, ok := p["inherit_parent"]; ok {
		if json.Unmarshal(raw, &req.InheritParent) != nil {
			return req, jsonrpc.InvalidParams("inherit_parent must be true or false")
		}
		if req.InheritParent && req.ParentSession == "" {
			return req, jsonrpc.InvalidParams("inherit_parent needs parent_session: the session whose kernel the subagent starts from")
		}
	}
	if req.Kind, rerr = stringParam(p, "kind", false); rerr != nil {
		return req, rerr
	}
	kind, ok := config.NormalizeKind(req.Kind)
	if !ok {
		return req, jsonrpc.InvalidParams("%s", config.UnknownKind("kind", req.Kind))
	}
	req.Kind = kind
	if req.Tools, rerr = toolsParam(p); rerr != nil {
		return req, rerr
	}
	if req.SkillEnv, rerr = namesParam(p, "skill_env"); rerr != nil {
		return req, rerr
	}
	if raw, ok := p["timeout"]; ok {
		var secs float64
		if json.Unmarshal(raw, &secs) != nil || secs <= 0 || secs > 86400 || math.IsNaN(secs) {
			return req, jsonrpc.InvalidParams("timeout must be a number of seconds greater than 0 and at most 86400, not %s", raw)
		}
		req.Timeout = time.Duration(secs * float64(time.Second))
	}
	if raw, ok := p["max_tool_calls"]; ok {
		n, err := strconv.Atoi(string(raw))
		if err != nil || n < 0 {
			return req, jsonrpc.InvalidParams("max_tool_calls must be a whole number of 0 or more, not %s", raw)
		}
		req.MaxToolCalls = &n
	}
	return req, nil
}

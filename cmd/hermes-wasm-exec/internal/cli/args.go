package cli

import (
	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/runtime/executor"
)

// ArgumentResult is the result serve and mcp give an execute_code call
// refused for its arguments (message is one of Hermes's argument errors,
// from executor.CodeArgument): status "error", the message as error and
// output, nothing run; mode is the mode the call would have run in.
func ArgumentResult(mode, message string) executor.Result {
	return executor.Result{
		Status:    config.StatusError,
		Output:    message,
		Error:     message,
		Mode:      mode,
		ToolCalls: []executor.ToolCall{},
	}
}

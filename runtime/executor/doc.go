// Package executor runs agent-written Python scripts: it picks the mode,
// wires the tools and the shared limits, and returns the result of docs/behaviour.md §6.
// It is the one entry point the CLI and embedders use; the engines it
// dispatches to never import it.
//
// # Embedding
//
// Import this package and config (for the configuration struct and the
// mode and status values); nothing else:
//
//	import (
//		"github.com/hermes-agent/hermes-wasm-exec/config"
//		"github.com/hermes-agent/hermes-wasm-exec/runtime/executor"
//	)
//
// No wazero type appears in these APIs. The interpreter and its standard
// library are committed in pyodide-assets/dist and embedded with go:embed,
// so `go get` and `go build` give a program whose strict mode works with no
// other step and needs no file at run time (testdata/embed is such a
// program). $HERMES_WASM_INTERPRETER may point at a python.wasm with its
// python313.zip beside it instead; it is verified against the same pins.
//
// # Lifecycle
//
// [New] takes [Options], all optional: nil Config means config.Default(),
// so no config file is read unless the embedder loads one with the config
// package. Change defaults by editing the struct config.Default() returns.
// The first strict run of a process loads the compiled interpreter from
// the on-disk cache ($HERMES_HOME/cache/wasm, or $HERMES_WASM_CACHE_DIR),
// compiling it once per machine; [Executor.Warm] does that ahead of time.
//
// [Executor.Execute] runs one [Request] and returns a [Result], the
// JSON object of docs/behaviour.md §6. Without Request.Session the script runs in a
// fresh interpreter; with it, in that session's kernel, whose globals and
// imports persist between calls. [Executor.CloseSession] disposes a
// session's kernels; [Executor.StartWarmPool] keeps strict interpreters
// ready for new sessions.
//
// [Executor.Close] ends the executor: it interrupts running calls, ends
// every session kernel, warm-pool interpreter and child process, waits for
// the running calls to return (until its ctx is done) and frees the
// compiled interpreter. It is idempotent; calls after it return
// [ErrClosed].
//
// [Executor.Diagnose] reports what the executor would run scripts with
// (the strict interpreter's pins and whether it verifies, project mode's
// python as the executor's environment resolves it, the cache and spill
// dirs) without compiling or running anything: a health check.
//
// # Concurrency
//
// An Executor is safe for concurrent use. Calls of different sessions (and
// one-shot calls) run concurrently; calls of one session hold the
// session's turn one at a time, in arrival order, from before their
// approval to their result. [Executor.Start] takes a call's place in that
// order before it returns, for a front end that reads requests off a wire
// and must keep their order ([Call.Wait] gives the result).
// [Executor.Interrupt] stops the call holding a session's turn from another
// goroutine (running, or waiting for its approval or its interpreter);
// cancelling the ctx given to Execute interrupts that call,
// with the reason of a *[InterruptError] cause
// (context.WithCancelCause). Tool handlers and approvers are called from
// the goroutines running scripts, possibly concurrently (project-mode
// scripts may call tools from several threads).
//
// # Customizing
//
//   - Tools: [Options].Tools (or Request.ToolHandlers, per call) replaces
//     any of the seven tools with a [ToolHandler] that takes the same
//     arguments and returns the same result shape; Request.Tools restricts
//     the enabled set.
//   - Approvals: an [Approver] ([Options].Approver, or Request.Approver)
//     answers the approval requests of docs/behaviour.md §8; [ApproverFunc] adapts a
//     function.
//   - Environment: [Options].SkillEnv and [Executor.RegisterSkillEnv] let
//     skills pass the variables they declare (required_environment_variables)
//     like terminal.env_passthrough, for every session;
//     [Executor.RegisterSessionSkillEnv] and Request.SkillEnv for one
//     session (or one call). [ParseSkillFile] and [SkillEnvFromMarkdown] read
//     the names from a SKILL.md as Hermes does. Host-managed provider
//     credentials are refused with a warning.
//   - Live output: Request.Output receives what the script prints while it
//     runs (stdout and stderr chunks, coalesced to one call per stream
//     every 100 ms at most, never after Execute returns); the result is
//     the same with or without it.
//   - The tool as a model sees it: [ExecuteCodeSchema] builds execute_code's
//     description and parameters by Hermes's rules, and [CodeArgument] reads
//     a model's arguments with Hermes's errors ([NoCodeMessage],
//     [CommandNotCodeMessage], [NonStringCodeMessage]); Execute answers an
//     empty script with [NoCodeMessage].
//
// # Log events
//
// [Options].Logger receives structured events (log/slog), each with a
// stable message:
//
//   - "execute done" (info): session, mode, status, duration, tool_calls,
//     and blocked or error when set; one per Execute call.
//   - "tool call" (debug): session, tool, duration_ms, ok; one per tool
//     call, after the Execute call that made it.
//   - "dropped HERMES_* variables" (debug): names, count.
//   - "passthrough refused" (warn): names of terminal.env_passthrough, or of
//     terminal.client_env in a Config built in code, that are host-managed
//     credentials; source says which.
//   - "skill environment variable refused" (warn): names, reason, and
//     session for a session's registration.
//   - "skill environment variables registered" (info): names, and session
//     for a session's registration.
//   - "unknown mode, falling back to strict" (warn): mode.
//   - "unknown sandbox, using wasm" (warn): sandbox.
//   - "python skipped" (info): candidate (path, source and why).
//   - "embedded interpreter fallback" (warn): project mode found no usable
//     python.
//   - "kernel evicted" (info): session, mode, reason "lru",
//     max_session_kernels.
//   - "idle kernel closed" (info): session, mode, kernel_idle_timeout.
//   - "no kernel slot" (warn): session, max_session_kernels, timeout,
//     waited; every session kernel ran a call for as long as the call's
//     timeout, so it ran as a standalone script.
//   - "remote kernel unavailable" (warn): session, backend, error; the
//     session's kernel could not start on the remote backend, so the call
//     ran as a standalone script there.
//   - Durable session kernels (code_execution.session_store): "kernel
//     suspended" (info): session, reason (lru, idle, shutdown, handoff),
//     bytes, duration; "kernel not suspended" (info when it cannot be, an
//     open directory or past session_store_max_mb; warn when the store
//     failed): session, reason, error; "kernel resumed" (info): session,
//     duration; "kernel not resumed" (warn): session, error; "kernel
//     checkpointed" (debug) and "kernel not checkpointed" (info or warn):
//     session, bytes or error; "session forked" (info): from, to,
//     kernels; "session taken over" (info): session, from (a holder gone);
//     "session handed over" (info): session (another executor asked for
//     it); "kernel fenced: the session's lease was lost" (warn): session;
//     "session lease not renewed", "session lease not released", "session
//     handoff not asked", "session handoff requests not read", "session
//     store: no lease" (warn): session, error; "expired session images
//     removed" (info): images, session_ttl; "session store off" (error):
//     error, when the setting cannot be used.
//   - "warm pool failed" (error): error.
//   - "stdout spill failed" (warn): dir, error; a truncated stdout could
//     not be saved in full (the result's warning then gives no path).
//
// Without a Logger nothing is logged. A front end that prints lines
// renders these events with a slog.Handler of its own.
package executor

package engine

import _ "embed"

// RunnerName is the file name of the runner module placed beside the
// generated hermes_tools module.
const RunnerName = "_hermes_runner.py"

// StubName is the file name of the generated tools module.
const StubName = "hermes_tools.py"

// ScriptName is the file name the script is saved under.
const ScriptName = "script.py"

// ScriptNameEnv, in a one-shot run's environment, is the name the runner
// gives the script's code (executor.Request.ScriptName), for tracebacks; the
// runner removes it from the environment before the script runs.
const ScriptNameEnv = "HERMES_SCRIPT_NAME"

// Runner is the Python entry point of every execution, in both modes:
// `python _hermes_runner.py SCRIPT` (project mode), or
// `python -c PROGRAM SCRIPT` (strict mode, whose -c program imports it, so
// that its cached bytecode is used, and calls _hermes_runner.run: see
// runtime/internal/strict's runnerCommand). It runs the script as __main__ and
// reports an uncaught exception (type, message, and a traceback that starts
// at the script's own frames) to the host through the tool channel, so the
// host can tell sys.exit(1) from an uncaught error. A normal end or
// sys.exit is told by the exit status alone, so a script that raises
// nothing never imports traceback or json (slow in the WASI build).
//
//go:embed python/runner.py
var Runner string

package executor

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hermes-agent/hermes-wasm-exec/config"
)

// TestProjectPoolNotWithSandbox: with code_execution.sandbox: wasm,
// project-mode calls run in the embedded interpreter, so the warm pool
// keeps no native project kernel, and resolving its python runs nothing
// of the working dir. Before, StartWarmPool (at every start of serve or
// mcp, and again when a skill registered a variable) probed and started
// the working dir's virtualenv python on the host, one a sandboxed script
// may have replaced by a program of its own.
func TestProjectPoolNotWithSandbox(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the planted python is a POSIX shell script")
	}
	wd := t.TempDir()
	marker := filepath.Join(t.TempDir(), "ran")
	py := filepath.Join(wd, ".venv", "bin", "python")
	require.NoError(t, os.MkdirAll(filepath.Dir(py), 0o755))
	require.NoError(t, os.WriteFile(py, []byte("#!/bin/sh\necho ran >> "+marker+"\necho 3.11.0\n"), 0o755))
	for _, sandbox := range []string{config.SandboxWasm, config.SandboxNone} {
		cfg := config.Default()
		cfg.CodeExecution.Mode = config.ModeProject
		cfg.CodeExecution.Sandbox = sandbox
		cfg.CodeExecution.WarmPool = 1
		e := New(Options{Config: &cfg, HermesHome: t.TempDir(), Environ: []string{"VIRTUAL_ENV=" + filepath.Join(wd, ".venv"), "PATH=/nonexistent"}})
		target := e.projectPoolTarget(context.Background(), wd)
		require.NoError(t, e.Close(context.Background()))
		if sandbox == config.SandboxWasm {
			require.Equal(t, projectPoolKey{}, target, "no native pool for sandboxed calls")
			require.NoFileExists(t, marker, "the working dir's python was run")
			continue
		}
		require.Equal(t, projectPoolKey{py, wd}, target, "without the sandbox, project mode's python")
	}
}

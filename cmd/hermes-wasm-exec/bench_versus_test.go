package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/native"
)

// TestBenchVersus: bench's compute rows say how strict mode compares with
// native python and V8, whether it meets the goal and, when not,
// the measured reason.
func TestBenchVersus(t *testing.T) {
	ms := time.Millisecond
	require.Equal(t, "", versus(500*ms, 0, 0, 2.5), "no native python: nothing to compare")
	require.Equal(t, "2.0x native; goal <= 2.5x native: met", versus(200*ms, 100*ms, 0, 2.5))
	require.Equal(t, "2.0x native, 1.0x V8", versus(200*ms, 100*ms, 200*ms, 0))
	require.Equal(t, "4.9x native, 2.5x V8; goal <= 2.5x native: not met (V8 runs this module at 2.0x native; the rest is wazero's code generation: docs/performance.md, Compute)",
		versus(490*ms, 100*ms, 196*ms, 2.5))
	require.Equal(t, "3.0x native; goal <= 1.5x native: not met", versus(300*ms, 100*ms, 0, 1.5))
}

// TestBenchSandboxedRows: the sandboxed project mode is the bench's third
// mode, project mode over the embedded interpreter, and its rows say what
// its guest sees beside the working dir.
func TestBenchSandboxedRows(t *testing.T) {
	require.Equal(t, []benchMode{
		{"strict", config.ModeStrict, ""},
		{"project", config.ModeProject, ""},
		{"sandboxed project", config.ModeProject, config.SandboxWasm},
	}, benchModes)
	require.Equal(t, "site-packages of python3 3.11.7 read-only", sandboxNote(native.Choice{Path: "/usr/bin/python3", Version: "3.11.7"}))
	require.Equal(t, "no host python: standard library only", sandboxNote(native.Choice{}))
}

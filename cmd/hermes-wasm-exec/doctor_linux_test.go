package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hermes-agent/hermes-wasm-exec/internal/landlock"
)

// TestDoctorLandlock: doctor says whether the processes a run starts are
// kept from the executor's state, and what it protects; with
// code_execution.landlock: off, that they are not.
func TestDoctorLandlock(t *testing.T) {
	e := newEnv(t)
	var out, errb bytes.Buffer
	require.Equal(t, 0, Run([]string{"doctor"}, nil, &out, &errb), errb.String())
	st := landlock.Probe()
	if st.Enforced {
		require.Contains(t, out.String(), "  landlock  ABI ")
		require.Contains(t, out.String(), "enforced (no writes to the executor's state")
		require.Contains(t, out.String(), "  protects  "+filepath.Join(e.home, "cache")+"\n")
		require.Contains(t, out.String(), "  protects  "+filepath.Join(e.home, "config.yaml")+"\n")
	} else {
		require.Contains(t, out.String(), "  landlock  not available: "+st.Reason)
	}

	conf := filepath.Join(e.home, "config.yaml")
	require.NoError(t, os.WriteFile(conf, []byte("code_execution:\n  landlock: off\n"), 0o600))
	out.Reset()
	require.Equal(t, 0, Run([]string{"doctor"}, nil, &out, &errb), errb.String())
	require.Contains(t, out.String(), "  landlock  off (code_execution.landlock: off)\n")
	require.NotContains(t, out.String(), "  protects  ")
	require.Contains(t, out.String(), "landlock: \"off\"")
}

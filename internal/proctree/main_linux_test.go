package proctree

import (
	"os"
	"testing"

	"github.com/hermes-agent/hermes-wasm-exec/internal/testenv"
)

// TestMain checks, after the tests, that no tree left a cgroup behind.
func TestMain(m *testing.M) { os.Exit(testenv.MainCheckingCgroups(m.Run)) }

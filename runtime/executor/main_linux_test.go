package executor_test

import (
	"os"
	"testing"

	"github.com/hermes-agent/hermes-wasm-exec/internal/backend/backendtest"
	"github.com/hermes-agent/hermes-wasm-exec/internal/testenv"
)

// TestMain stops the engines the remote backend tests started, and checks
// that no cgroup of this process is left.
func TestMain(m *testing.M) {
	os.Exit(testenv.MainCheckingCgroups(func() int { return backendtest.Main(m) }))
}

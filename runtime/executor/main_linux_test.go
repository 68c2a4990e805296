package executor_test

import (
	"os"
	"testing"

	"github.com/hermes-agent/hermes-wasm-exec/internal/backend/backendtest"
)

// TestMain stops the engines the remote backend tests started.
func TestMain(m *testing.M) { os.Exit(backendtest.Main(m)) }

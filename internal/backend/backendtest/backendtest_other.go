//go:build !linux

package backendtest

import (
	"testing"

	"github.com/hermes-agent/hermes-wasm-exec/internal/testenv"
)

const linuxOnly = "remote backend tests run on Linux only"

// Docker fails tb: remote backend tests run on Linux only.
func Docker(tb testing.TB) *DockerEngine {
	tb.Helper()
	testenv.RealEngines(tb, "a private dockerd")
	tb.Fatal(linuxOnly)
	return nil
}

// Run fails tb: remote backend tests run on Linux only.
func (d *DockerEngine) Run(tb testing.TB, args ...string) string {
	tb.Helper()
	tb.Fatal(linuxOnly)
	return ""
}

// SSH fails tb: remote backend tests run on Linux only.
func SSH(tb testing.TB) *SSHServer {
	tb.Helper()
	testenv.RealEngines(tb, "an sshd on the loopback")
	tb.Fatal(linuxOnly)
	return nil
}

// Main runs the tests of a package: elsewhere than on Linux there is
// nothing to stop.
func Main(m *testing.M) int {
	return m.Run()
}

// PrepareImage does nothing off Linux, where the remote backend tests fail
// saying they run on Linux only.
func PrepareImage() (string, error) { return "", nil }

// Program fails tb: these tests run on Linux only.
func Program(tb testing.TB, name, path, pkg string) string {
	tb.Helper()
	testenv.RealEngines(tb, name+" ("+pkg+")")
	tb.Fatal(linuxOnly)
	return ""
}

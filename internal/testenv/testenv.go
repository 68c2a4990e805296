// Package testenv tells tests about the platform and tier they run in
// where that decides what they can check: the Windows stage (.ci/windows)
// runs the Windows test binaries under wine, which lacks some of what
// Windows has (AF_UNIX sockets, a Windows CPython to install, git, go);
// `make check` runs no test that needs a real engine (RealEngines).
package testenv

import (
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
)

// WineEnv is set to 1 by .ci/windows for every test binary it runs under
// wine.
const WineEnv = "HERMES_TEST_WINE"

// UnderWine reports whether this is a Windows test binary run by
// .ci/windows under wine.
func UnderWine() bool {
	return runtime.GOOS == "windows" && os.Getenv(WineEnv) == "1"
}

// SkipUnderWine skips t under wine, saying what wine lacks and where that
// path is tested instead. why must name both: "wine has no AF_UNIX; the
// Unix-socket transport is tested on Linux".
func SkipUnderWine(t testing.TB, why string) {
	t.Helper()
	if UnderWine() {
		t.Skip("Windows under wine: " + why)
	}
}

// RealPython returns the host's python3 (the interpreter itself, as
// sys.executable names it, not a version-manager shim), or skips t when
// there is none, it does not run, or this is wine (which has no Windows
// CPython).
func RealPython(t testing.TB) string {
	t.Helper()
	SkipUnderWine(t, "wine has no Windows CPython; the real-python tests run on Linux, and project mode is covered here by the fake child over loopback TCP")
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 on PATH")
	}
	out, err := exec.Command(py, "-c", "import sys; print(sys.executable)").Output()
	if err != nil {
		t.Skipf("python3 does not run: %v", err)
	}
	if exe := strings.TrimSpace(string(out)); exe != "" {
		return exe
	}
	return py
}

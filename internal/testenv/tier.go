package testenv

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// TierEnv names the test tier. `make check` sets it to "check": unit and
// in-process tests only, no root, no apt-get, no daemons, no wine. Unset
// (or anything else) is the full tier, `make test`, where every test runs.
const TierEnv = "HERMES_TEST_TIER"

// SkippedEnv, when set in the check tier, is a file to which RealEngines
// appends a line "DIR<TAB>TEST" for each test it skips: the test binary's
// working dir (its package's dir) and the top-level test's name. `make
// test` runs exactly those tests in its real-engine stage (.ci/engines),
// so no test runs in two stages and none is forgotten.
const SkippedEnv = "HERMES_TEST_SKIPPED"

// CheckTier reports whether the tests run in `make check`'s tier.
func CheckTier() bool {
	return os.Getenv(TierEnv) == "check"
}

// RealEngines is the one gate of the tests that need more than Go and
// this machine's unprivileged user: a real engine started by the test (a
// private dockerd, an sshd, HAProxy, node and npm, qemu), a program
// installed with apt-get as root, or minutes of CPU (the release built
// from an empty Go build cache). what names it ("a private dockerd").
// In the check tier it skips tb with a one-line reason naming `make test`;
// in the full tier it does nothing, and the test goes on to start the
// engine or fail saying what to install.
func RealEngines(tb testing.TB, what string) {
	tb.Helper()
	if !CheckTier() {
		return
	}
	if path := os.Getenv(SkippedEnv); path != "" {
		recordSkip(tb, path)
	}
	tb.Skipf("needs %s: runs in `make test` (%s=check skips it)", what, TierEnv)
}

// recordSkip appends tb's package dir and top-level test to path; one
// short write with O_APPEND, so test binaries running at once do not
// interleave their lines.
func recordSkip(tb testing.TB, path string) {
	tb.Helper()
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatalf("%s: %v", SkippedEnv, err)
	}
	top, _, _ := strings.Cut(tb.Name(), "/")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		tb.Fatalf("%s: %v", SkippedEnv, err)
	}
	_, err = fmt.Fprintf(f, "%s\t%s\n", dir, top)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		tb.Fatalf("%s: %v", SkippedEnv, err)
	}
}

// SkipUnderRace skips tb in a test binary built with -race, whose shadow
// memory and instrumentation inflate what tb measures (resident memory,
// bytes allocated). The Makefile runs such tests of runtime/internal/strict
// without -race too (NORACE_STRICT): add tb's name there. why says what
// is measured.
func SkipUnderRace(tb testing.TB, why string) {
	tb.Helper()
	if Race {
		tb.Skipf("under -race, which inflates %s: the Makefile runs this test without -race too (NORACE_STRICT)", why)
	}
}

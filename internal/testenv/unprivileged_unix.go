//go:build unix

package testenv

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
)

// NobodyID is the uid and gid an unprivileged child runs as: nobody and
// nogroup on Debian.
const NobodyID = 65534

// rerunEnv is set to 1 in the environment of the child Unprivileged
// starts.
const rerunEnv = "HERMES_TEST_UNPRIVILEGED"

// UnprivilegedRerun reports whether this test binary is the child that
// Unprivileged started as nobody.
func UnprivilegedRerun() bool {
	return os.Getenv(rerunEnv) == "1"
}

// Unprivileged makes the rest of t run as a user that is not root, for a
// test whose point is what an ordinary user meets (POSIX permissions, a
// non-dumpable process), which root would get around. Not root, it
// returns true at once and t goes on in this process. As root (CI), it
// runs t alone again in a copy of the test binary as nobody, fails t with
// the child's output when the child fails, and returns false: the caller
// then returns. The child runs in this process's working dir (the
// package's dir, which nobody must be able to read, as a git checkout
// is) with HOME set to an empty dir of its own, where its caches go.
func Unprivileged(t *testing.T) bool {
	t.Helper()
	if os.Geteuid() != 0 {
		return true
	}
	dir, err := os.MkdirTemp("", "unprivileged-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	// MkdirTemp makes dirs only root can enter; nobody must run the copy
	// and own its HOME.
	home := filepath.Join(dir, "home")
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(home, NobodyID, NobodyID); err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(dir, "unprivileged.test")
	if err := copyExecutable(os.Args[0], exe); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run", runPattern(t.Name()), "-test.count", "1", "-test.v")
	// Not this user's caches (HERMES_WASM_CACHE_DIR, XDG_CACHE_HOME), which
	// nobody can neither read nor write: the child's are under its HOME.
	cmd.Env = []string{"HOME=" + home, rerunEnv + "=1"}
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "HOME", "HERMES_WASM_CACHE_DIR", "XDG_CACHE_HOME", rerunEnv:
		default:
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: NobodyID, Gid: NobodyID}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s as nobody (uid %d) failed: %v\n%s", t.Name(), NobodyID, err, out)
	}
	// A child that matched no test, or skipped it, proved nothing.
	if !strings.Contains(string(out), "--- PASS: "+t.Name()+" ") {
		t.Fatalf("%s as nobody (uid %d) did not pass:\n%s", t.Name(), NobodyID, out)
	}
	t.Logf("ran as nobody (uid %d) in a child process", NobodyID)
	return false
}

// runPattern is the -test.run pattern that selects exactly the test
// named name (subtests separated by slashes) and nothing else.
func runPattern(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return strings.Join(parts, "/")
}

// copyExecutable copies the file from to a new file to, readable and
// executable by every user.
func copyExecutable(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}

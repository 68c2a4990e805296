package hardening

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// helperArg makes the test binary act as a hardened program (see TestMain).
const helperArg = "hardening-helper"

// report is what the helper prints.
type report struct {
	Pid      int               `json:"pid"`
	Getenv   map[string]string `json:"getenv"`
	Initial  string            `json:"initial"`  // /proc/self/environ
	ChildErr string            `json:"childErr"` // a child reading /proc/$PPID/environ
	Child    string            `json:"child"`
	Dumpable bool              `json:"dumpable"`
	MaxProcs int               `json:"maxprocs"`
	Err      string            `json:"err"`
}

func TestMain(m *testing.M) {
	mode := ""
	if len(os.Args) == 3 && os.Args[1] == helperArg {
		mode = os.Args[2] // argv survives the re-exec unchanged
	}
	switch mode {
	case "":
		os.Exit(m.Run())
	case "hide":
		r := report{}
		if err := HideSecrets(); err != nil {
			r.Err = err.Error()
		}
		helperReport(&r)
	case "nondump":
		r := report{}
		if err := SetNonDumpable(); err != nil {
			r.Err = err.Error()
		}
		helperReport(&r)
	case "plain":
		helperReport(&report{})
	}
	os.Exit(0)
}

// helperReport fills in what the process and a child of it can see, and
// prints it.
func helperReport(r *report) {
	r.Pid = os.Getpid()
	r.Getenv = map[string]string{}
	for _, n := range []string{"GITHUB_TOKEN", "MY_API_KEY", "RANDOM_THING", "LANG", "PATH", "GOMAXPROCS", fdEnv} {
		r.Getenv[n] = os.Getenv(n)
	}
	if b, err := os.ReadFile("/proc/self/environ"); err == nil {
		r.Initial = string(bytes.ReplaceAll(b, []byte{0}, []byte{'\n'}))
	}
	v, _ := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
	r.Dumpable = v != 0
	r.MaxProcs = goruntime.GOMAXPROCS(0)
	cmd := exec.Command("/bin/sh", "-c", `tr '\0' '\n' < /proc/$PPID/environ`)
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		r.ChildErr = err.Error() + ": " + errb.String()
	}
	r.Child = out.String()
	json.NewEncoder(os.Stdout).Encode(r)
}

// runHelper runs the test binary (exe) as a helper in mode with extra env.
func runHelper(t *testing.T, exe, mode string, env []string, cred *syscall.Credential) (report, int) {
	t.Helper()
	cmd := exec.Command(exe, helperArg, mode)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	require.NoError(t, cmd.Start())
	pid := cmd.Process.Pid
	require.NoError(t, cmd.Wait(), errb.String())
	var r report
	require.NoError(t, json.Unmarshal(out.Bytes(), &r), out.String()+errb.String())
	require.Empty(t, r.Err)
	return r, pid
}

// TestHideSecrets: after HideSecrets the process (same pid: it re-executed
// itself) still reads every variable with os.Getenv, but neither its own
// /proc/self/environ nor a child reading /proc/$PPID/environ shows a hidden
// one. The "plain" helper is the control: without it both show them.
func TestHideSecrets(t *testing.T) {
	env := []string{"GITHUB_TOKEN=ghp_secret123", "MY_API_KEY=key-secret456", "RANDOM_THING=xyz789", "LANG=C.UTF-8", "GOMAXPROCS=1"}

	plain, _ := runHelper(t, os.Args[0], "plain", env, nil)
	require.Contains(t, plain.Initial, "ghp_secret123")
	require.Contains(t, plain.Child, "ghp_secret123", "control: a child reads the parent's environ")

	r, pid := runHelper(t, os.Args[0], "hide", env, nil)
	require.Equal(t, pid, r.Pid, "re-executed in place")
	require.Equal(t, "ghp_secret123", r.Getenv["GITHUB_TOKEN"])
	require.Equal(t, "key-secret456", r.Getenv["MY_API_KEY"])
	require.Equal(t, "xyz789", r.Getenv["RANDOM_THING"])
	require.Equal(t, "C.UTF-8", r.Getenv["LANG"])
	require.Empty(t, r.Getenv[fdEnv], "the hand-over variable is gone from the Go environment")
	// The Go runtime reads its settings from the initial environment at
	// start: they stay there, so they still take effect.
	require.Equal(t, 1, r.MaxProcs)
	require.Contains(t, r.Initial, "GOMAXPROCS=1")
	for _, s := range []string{r.Initial, r.Child} {
		require.NotContains(t, s, "ghp_secret123")
		require.NotContains(t, s, "key-secret456")
		require.NotContains(t, s, "xyz789")
		require.Contains(t, s, "LANG=C.UTF-8")
	}
	// The memfd is closed after reading: no descriptor beyond stdio and the
	// runtime's own is left pointing at it.
	require.NotContains(t, r.Child, "hermes-hidden-env")
}

// TestHideSecretsNothingToHide: an allow-listed environment is left alone
// (no re-exec, no hand-over variable).
func TestHideSecretsNothingToHide(t *testing.T) {
	r, _ := runHelper(t, os.Args[0], "hide", []string{"LANG=C"}, nil)
	require.NotContains(t, r.Initial, fdEnv)
	require.Equal(t, "C", r.Getenv["LANG"])
}

// TestNonDumpable: a child of the same non-root user cannot read the
// environ of a non-dumpable parent; the control (dumpable) can. As root the
// helpers run as nobody, since root reads everything anyway.
func TestNonDumpable(t *testing.T) {
	exe := os.Args[0]
	var cred *syscall.Credential
	if os.Getuid() == 0 {
		// nobody must be able to execute the test binary: copy it to a
		// world-readable dir.
		dir, err := os.MkdirTemp("", "hardening-")
		require.NoError(t, err)
		t.Cleanup(func() { os.RemoveAll(dir) })
		require.NoError(t, os.Chmod(dir, 0o755))
		exe = filepath.Join(dir, "helper.test")
		copyFile(t, os.Args[0], exe)
		cred = &syscall.Credential{Uid: 65534, Gid: 65534}
	}
	env := []string{"LANG=C.UTF-8", "MARKER=visible"}

	plain, _ := runHelper(t, exe, "plain", env, cred)
	require.True(t, plain.Dumpable)
	require.Empty(t, plain.ChildErr)
	require.Contains(t, plain.Child, "MARKER=visible", "control: a same-user child reads a dumpable parent's environ")

	r, _ := runHelper(t, exe, "nondump", env, cred)
	require.False(t, r.Dumpable)
	require.NotContains(t, r.Child, "MARKER=visible")
	require.Contains(t, r.ChildErr, "Permission denied")
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	require.NoError(t, err)
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	require.NoError(t, err)
	_, err = io.Copy(dst, src)
	require.NoError(t, err)
	require.NoError(t, dst.Close())
}

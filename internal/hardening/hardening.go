// Package hardening holds the process-wide protections of the executor's
// own process: what a script, or anything it launches, could otherwise read
// or change of the host process around it.
//
//   - [HideSecrets] takes every variable a script would not be given out of
//     the process's initial environment (the block the kernel shows in
//     /proc/<pid>/environ, readable by root and by the same user) and keeps
//     them only in the Go environment of a re-executed image.
//   - [SetNonDumpable] closes /proc/<pid>/{environ,fd,mem} and ptrace to
//     processes of the same (non-root) user, the executor's own children
//     included.
//
// Neither is a boundary against root: root reads any process's memory.
// SECURITY.md says what each protects against.
package hardening

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	goruntime "runtime"
	"strings"

	"github.com/hermes-agent/hermes-wasm-exec/internal/engine"
)

// fdEnv names the variable through which a re-executed image finds the
// descriptor holding the hidden variables. Its value is a descriptor number,
// nothing secret.
const fdEnv = "HERMES_WASM_EXEC_ENV_FD"

// maxHandover bounds what a re-executed image reads back (the hidden part
// of an environment; Linux caps a whole environment at 2 MiB by default).
const maxHandover = 8 << 20

// runtimeSettings stay in the initial environment although a script does
// not get them: the Go runtime and the dynamic loader read them from there
// when the image starts, before any os.Setenv could put them back. None is
// a secret.
var runtimeSettings = []string{
	"GOMAXPROCS", "GOGC", "GOMEMLIMIT", "GOTRACEBACK", "GODEBUG", "LD_LIBRARY_PATH",
}

// split divides environ (KEY=VALUE entries, as from os.Environ) into what
// stays in the process's initial environment and what is hidden: exactly
// the variables that [engine.ScrubEnv] with no passthrough would keep stay,
// so the executor's /proc/<pid>/environ shows no more than a script's own
// environment does.
func split(environ []string) (visible, hidden []string) {
	visible, _ = engine.ScrubEnv(environ, engine.EnvOptions{Windows: goruntime.GOOS == "windows", Passthrough: runtimeSettings})
	keep := make(map[string]int, len(visible))
	for _, kv := range visible {
		keep[kv]++
	}
	for _, kv := range environ {
		if keep[kv] > 0 {
			keep[kv]--
			continue
		}
		if name, _, ok := strings.Cut(kv, "="); ok && name != "" {
			hidden = append(hidden, kv)
		}
	}
	return visible, hidden
}

// HideSecrets makes sure no variable outside a script's own allow-list
// (docs/behaviour.md §4: every secret-named one, provider keys, tokens) is left in the
// process's initial environment.
//
// In a process started normally it splits the environment with [split]; when
// something must be hidden it writes the hidden entries to a descriptor that
// survives exec (a memfd on Linux, a pipe elsewhere) and re-executes the same
// program, with the same arguments, under the visible environment only. It
// does not return then. In the re-executed image it reads the hidden entries
// back into the Go environment (os.Setenv), where every os.Getenv finds them
// but /proc/<pid>/environ, which shows the environment the image was started
// with, does not.
//
// Call it first thing in main, before any goroutine or file is opened: the
// re-executed image starts from main again. It returns nil, doing nothing,
// on Windows and when nothing needs hiding. An error means the environment
// is unchanged and the program can go on (with its secrets visible).
func HideSecrets() error {
	if v, ok := os.LookupEnv(fdEnv); ok {
		return restore(v)
	}
	visible, hidden := split(os.Environ())
	if len(hidden) == 0 || !reexecSupported {
		return nil
	}
	data, err := json.Marshal(hidden)
	if err != nil {
		return err
	}
	if err := reexec(data, visible); err != nil {
		return fmt.Errorf("%w: the hidden variables stay readable in /proc/%d/environ (is /proc mounted? or start the program with fewer secrets in its environment)", err, os.Getpid())
	}
	return nil
}

// restore reads the hidden entries back from the descriptor named by v.
func restore(v string) error {
	os.Unsetenv(fdEnv)
	var fd int
	if _, err := fmt.Sscanf(v, "%d", &fd); err != nil || fd < 3 {
		return fmt.Errorf("hardening: %s=%q is not a descriptor number; it is internal to the re-executed program: unset it", fdEnv, v)
	}
	f := os.NewFile(uintptr(fd), "hidden-env")
	if f == nil {
		return fmt.Errorf("hardening: descriptor %d is not open", fd)
	}
	defer f.Close()
	data, err := readAll(f)
	if err != nil {
		return fmt.Errorf("hardening: reading the hidden environment: %w", err)
	}
	var hidden []string
	if err := json.Unmarshal(data, &hidden); err != nil {
		return fmt.Errorf("hardening: decoding the hidden environment: %w", err)
	}
	for _, kv := range hidden {
		if name, val, ok := strings.Cut(kv, "="); ok && name != "" {
			os.Setenv(name, val)
		}
	}
	return nil
}

// readAll reads f to its end, at most maxHandover bytes.
func readAll(f *os.File) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(f, maxHandover+1))
	if err == nil && len(data) > maxHandover {
		err = fmt.Errorf("more than %d bytes", maxHandover)
	}
	return data, err
}

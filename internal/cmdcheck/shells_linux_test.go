package cmdcheck

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRenamesAsShellsRunThem runs each known way of renaming a command,
// and the others of its class, in the shells that run
// terminal() commands (dash is /bin/sh on Debian; bash --posix is /bin/sh
// on macOS and Fedora; bash is Git Bash's), with rm and git replaced by
// stubs that log their arguments. Each line must really run the stub (so
// the case is a real bypass, not a guess about the shell) and must be
// flagged by Check.
func TestRenamesAsShellsRunThem(t *testing.T) {
	t.Parallel()
	stubs := t.TempDir()
	log := filepath.Join(t.TempDir(), "log")
	for _, name := range []string{"rm", "git"} {
		script := "#!/bin/sh\necho \"" + name + " $*\" >> \"$STUB_LOG\"\n"
		require.NoError(t, os.WriteFile(filepath.Join(stubs, name), []byte(script), 0o755))
	}
	shells := map[string][]string{
		"dash":         {"dash", "-c"},
		"bash --posix": {"bash", "--posix", "-c"},
		"bash":         {"bash", "-c"},
	}
	for _, tc := range []struct {
		line   string
		shells []string // where the line renames the command
		runs   string   // what the stub logs
	}{
		{"alias r=rm\nr -rf x", []string{"dash", "bash --posix"}, "rm -rf x"},
		{"alias g=git\ng push --force", []string{"dash", "bash --posix"}, "git push --force"},
		{"alias s=sh\necho 'rm -rf x' | s", []string{"dash", "bash --posix"}, "rm -rf x"},
		{"shopt -s expand_aliases\nalias r=rm\nr -rf x", []string{"bash"}, "rm -rf x"},
		{"alias r=rm\nX=1 r -rf x", []string{"dash", "bash --posix"}, "rm -rf x"},
		{"alias r=rm\n>/dev/null r -rf x", []string{"dash", "bash --posix"}, "rm -rf x"},
		{"alias r=rm\nunalias r; r -rf x", []string{"dash", "bash --posix"}, "rm -rf x"},
		{"alias r=rm\nalias r=ls; r -rf x", []string{"dash", "bash --posix"}, "rm -rf x"},
		{"alias a=b\nalias b=rm\na -rf x", []string{"dash", "bash --posix"}, "rm -rf x"},
		{"alias n='nohup '\nalias r=rm\nn r -rf x", []string{"dash", "bash --posix"}, "rm -rf x"},
		{"alias e=''\nalias r=rm\ne r -rf x", []string{"dash", "bash --posix"}, "rm -rf x"},
		{"command alias r=rm\nr -rf x", []string{"dash", "bash --posix"}, "rm -rf x"},
		{"\\alias r=rm\nr -rf x", []string{"dash", "bash --posix"}, "rm -rf x"},
		{"alias r=rm\nf() { r -rf x; }\nf", []string{"dash", "bash --posix"}, "rm -rf x"},
		{"alias r=rm\ntrap 'r -rf x' EXIT", []string{"dash", "bash --posix"}, "rm -rf x"},
		{"alias r=rm\n. /dev/stdin <<EOF\nr -rf x\nEOF", []string{"dash", "bash --posix"}, "rm -rf x"},
		{"if true; then alias r=rm; fi\nr -rf x", []string{"dash", "bash --posix"}, "rm -rf x"},
		{"alias x='cd /tmp; rm'\nx -rf y", []string{"dash", "bash --posix"}, "rm -rf y"},
		{"f() { sh; }; echo 'rm -rf x' | f", []string{"dash", "bash --posix", "bash"}, "rm -rf x"},
		{"hash -p " + filepath.Join(stubs, "rm") + " r; r -rf x", []string{"bash --posix", "bash"}, "rm -rf x"},
		{"BASH_CMDS[r]=" + filepath.Join(stubs, "rm") + "; r -rf x", []string{"bash"}, "rm -rf x"},
		{"BASH_ALIASES[r]=rm\nr -rf x", []string{"bash --posix"}, "rm -rf x"},
		{"v=BASH_ALIASES; printf -v \"$v[r]\" rm\nr -rf x", []string{"bash --posix"}, "rm -rf x"},
		{"env 'BASH_FUNC_ls%%=() { rm -rf x; }' bash -c ls", []string{"dash", "bash"}, "rm -rf x"},
	} {
		require.NotEmpty(t, Check(tc.line), "%q must be flagged", tc.line)
		for _, name := range tc.shells {
			argv := shells[name]
			if _, err := exec.LookPath(argv[0]); err != nil {
				t.Logf("%s is not installed: %q not run with it", argv[0], tc.line)
				continue
			}
			require.NoError(t, os.WriteFile(log, nil, 0o644))
			cmd := exec.Command(argv[0], append(argv[1:], tc.line)...)
			cmd.Dir = t.TempDir()
			cmd.Env = []string{"PATH=" + stubs + ":/usr/bin:/bin", "STUB_LOG=" + log}
			out, _ := cmd.CombinedOutput()
			got, err := os.ReadFile(log)
			require.NoError(t, err)
			require.Contains(t, strings.Split(strings.TrimSpace(string(got)), "\n"), tc.runs,
				"%s -c %q: the stub did not run (output %q)", name, tc.line, out)
		}
	}
}

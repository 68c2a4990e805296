package backend

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The shell of terminal() commands on Windows: Git Bash where Hermes Agent
// finds it, in its order, else cmd.exe.
func TestWindowsShellChoice(t *testing.T) {
	dir := t.TempDir()
	mk := func(parts ...string) string {
		p := filepath.Join(append([]string{dir}, parts...)...)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte("MZ"), 0o755))
		return p
	}
	explicit := mk("custom", "bash.exe")
	portable := mk("local", "hermes", "git", "bin", "bash.exe")
	onPath := mk("path", "bash.exe")
	programFiles := mk("pf", "Git", "bin", "bash.exe")
	system32 := mk("windows", "System32", "bash.exe")

	t.Setenv("SYSTEMROOT", filepath.Join(dir, "windows"))
	t.Setenv("PATH", filepath.Dir(system32)) // WSL's launcher: never taken
	t.Setenv("LOCALAPPDATA", filepath.Join(dir, "nothing"))
	t.Setenv("ProgramFiles", filepath.Join(dir, "nothing"))
	t.Setenv("ProgramFiles(x86)", "")
	t.Setenv(GitBashEnv, "")
	cmd := shellCommand("echo hi")
	assert.Equal(t, []string{os.Getenv("COMSPEC")}, cmd.Args[:1], "no bash: cmd.exe")
	assert.True(t, LocalRunsCmd(), "no bash: the approval check reads cmd.exe lines")
	assert.Contains(t, cmd.SysProcAttr.CmdLine, ` /d /s /c "echo hi"`)

	steps := []struct {
		set  func()
		want string
	}{
		{func() { t.Setenv("ProgramFiles", filepath.Join(dir, "pf")) }, programFiles},
		{func() { t.Setenv("PATH", filepath.Dir(onPath)+string(os.PathListSeparator)+filepath.Dir(system32)) }, onPath},
		{func() { t.Setenv("LOCALAPPDATA", filepath.Join(dir, "local")) }, portable},
		{func() { t.Setenv(GitBashEnv, filepath.Join(dir, "missing.exe")) }, portable},
		{func() { t.Setenv(GitBashEnv, explicit) }, explicit},
	}
	for _, s := range steps {
		s.set()
		cmd := shellCommand("echo $HOME")
		assert.Equal(t, s.want, cmd.Path)
		assert.Equal(t, []string{s.want, "-c", "echo $HOME"}, cmd.Args)
		assert.False(t, LocalRunsCmd(), "Git Bash: the approval check reads sh lines")
	}
}

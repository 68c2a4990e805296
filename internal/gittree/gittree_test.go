package gittree

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/hermes-agent/hermes-wasm-exec/internal/testenv"
	"github.com/stretchr/testify/require"
)

func TestCopyTracked(t *testing.T) {
	testenv.SkipUnderWine(t, "wine has no git (and no Git for Windows to install); CopyTracked is tested on Linux, macOS and a Windows with Git for Windows, and its missing-git error by TestCopyTrackedWithoutGit")
	repo := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", repo, "-c", "user.email=t@example.com", "-c", "user.name=t"}, args...)...)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	git("init", "-q")
	write := func(name, content string) {
		p := filepath.Join(repo, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	write("a.txt", "committed")
	write("sub/b.txt", "b")
	write("gone.txt", "x")
	write("run.sh", "#!/bin/sh\n")
	require.NoError(t, os.Chmod(filepath.Join(repo, "run.sh"), 0o755))
	git("add", ".")
	git("commit", "-qm", "init")
	write("a.txt", "edited")     // working-tree contents win
	write("untracked.txt", "no") // never copied
	require.NoError(t, os.Remove(filepath.Join(repo, "gone.txt")))

	dst := t.TempDir()
	n, err := CopyTracked(repo, dst)
	require.NoError(t, err)
	require.Equal(t, 3, n)
	b, err := os.ReadFile(filepath.Join(dst, "a.txt"))
	require.NoError(t, err)
	require.Equal(t, "edited", string(b))
	require.FileExists(t, filepath.Join(dst, "sub", "b.txt"))
	require.NoFileExists(t, filepath.Join(dst, "untracked.txt"))
	require.NoFileExists(t, filepath.Join(dst, "gone.txt"))
	t.Run("keeps the executable bit", func(t *testing.T) {
		if runtime.GOOS == "windows" {
			t.Skip("Windows has no POSIX permission bits (no executable bit to keep): tested on Linux and macOS")
		}
		fi, err := os.Stat(filepath.Join(dst, "run.sh"))
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o755), fi.Mode().Perm())
	})

	_, err = CopyTracked(t.TempDir(), dst)
	require.ErrorContains(t, err, "git ls-files")
}

// TestCopyTrackedWithoutGit says what to install when git is missing.
func TestCopyTrackedWithoutGit(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := CopyTracked(t.TempDir(), t.TempDir())
	require.ErrorContains(t, err, "git is not on PATH (install it: "+installGit()+")")
	require.ErrorIs(t, err, exec.ErrNotFound)
}

package gittree

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCopyTracked(t *testing.T) {
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
	fi, err := os.Stat(filepath.Join(dst, "run.sh"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o755), fi.Mode().Perm())

	_, err = CopyTracked(t.TempDir(), dst)
	require.ErrorContains(t, err, "git ls-files")
}

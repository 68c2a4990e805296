package native

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Version managers' shims (pyenv, asdf) are scripts that find the python a
// directory selects and exec it: about 130 ms per start on the 2-core test
// machine, where the interpreter itself starts in 60 ms. Resolve asks the
// shim once which interpreter it runs for the session dir, by probing
// through it (the probe prints sys.executable), and project mode then
// starts that interpreter directly. The answer is cached by what the shim
// consults: the shim file, the version variables, the nearest
// .python-version and .tool-versions above the session dir and the global
// version files; any change among them probes again.

// shimKind reports which version manager's shim path is ("pyenv", "asdf"),
// or "" when it is not a shim: a small script that execs the manager.
func shimKind(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	head := make([]byte, 1024)
	n, _ := io.ReadFull(f, head)
	head = head[:n]
	if !bytes.HasPrefix(head, []byte("#!")) {
		return ""
	}
	switch {
	case bytes.Contains(head, []byte(`pyenv" exec`)), bytes.Contains(head, []byte("pyenv exec")):
		return "pyenv"
	case bytes.Contains(head, []byte("asdf exec")), bytes.Contains(head, []byte(`asdf" exec`)):
		return "asdf"
	}
	return ""
}

// fileState describes a file for a cache key: its path, size and mtime, or
// that it is absent.
func fileState(path string) string {
	fi, err := os.Stat(path)
	if err != nil {
		return path + ":-"
	}
	return fmt.Sprintf("%s:%d:%d", path, fi.Size(), fi.ModTime().UnixNano())
}

// nearest is the first of names found in dir or a parent of it.
func nearest(dir string, name string) string {
	for dir != "" {
		p := filepath.Join(dir, name)
		if _, err := os.Stat(p); err == nil {
			return p
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	return ""
}

// versionState is the state of everything pyenv and asdf consult to pick
// a python for dir.
func versionState(getenv func(string) string, dir string) string {
	home := getenv("HOME")
	pyenvRoot := getenv("PYENV_ROOT")
	if pyenvRoot == "" && home != "" {
		pyenvRoot = filepath.Join(home, ".pyenv")
	}
	parts := []string{
		"PYENV_VERSION=" + getenv("PYENV_VERSION"),
		"ASDF_PYTHON_VERSION=" + getenv("ASDF_PYTHON_VERSION"),
		"PATH=" + getenv("PATH"),
	}
	for _, name := range []string{".python-version", ".tool-versions"} {
		if p := nearest(dir, name); p != "" {
			parts = append(parts, fileState(p))
		} else {
			parts = append(parts, name+":-")
		}
	}
	if pyenvRoot != "" {
		parts = append(parts, fileState(filepath.Join(pyenvRoot, "version")))
	}
	if home != "" {
		parts = append(parts, fileState(filepath.Join(home, ".tool-versions")))
	}
	return strings.Join(parts, "\x00")
}

// throughShim asks the shim which interpreter it runs in dir (empty: this
// process's dir), probing once per shim and version state.
func throughShim(ctx context.Context, shim, dir string, getenv func(string) string, cacheFile string, h held) (python, version string, err error) {
	fi, err := os.Stat(shim)
	if err != nil {
		return "", "", fmt.Errorf("does not exist: %v", err)
	}
	if dir == "" {
		dir, _ = os.Getwd()
	}
	key := fmt.Sprintf("shim\x00%s\x00%d\x00%d\x00%s\x00%s", shim, fi.Size(), fi.ModTime().UnixNano(), dir, versionState(getenv, dir))
	return cachedProbe(ctx, key, cacheFile, func() (python, version string, err error) {
		out, err := runProbe(ctx, shim, dir, shimProbeTimeout, h, "import sys; print('%d.%d.%d' % sys.version_info[:3]); print(sys.executable)")
		if err != nil {
			return "", "", err
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != 2 {
			return "", "", fmt.Errorf("unexpected answer %q", out)
		}
		if version, err = checkVersion(lines[0]); err != nil {
			return "", "", err
		}
		python = strings.TrimSpace(lines[1])
		if fi, serr := os.Stat(python); serr != nil || fi.IsDir() {
			// No real interpreter to start directly: keep the shim.
			python = shim
		}
		return python, version, nil
	})
}

// shimProbeTimeout is generous: a shim's first start after an install can
// rehash its versions.
const shimProbeTimeout = 2 * probeTimeout

// Package native is project mode's side of the host: finding the user's
// Python interpreter and, with it, running scripts as a child process.
package native

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"time"
)

// MinMajor and MinMinor are the oldest Python project mode accepts.
const (
	MinMajor = 3
	MinMinor = 8
)

// probeTimeout bounds one interpreter probe.
const probeTimeout = 5 * time.Second

// Choice is the interpreter project mode would use, and why.
type Choice struct {
	// Path is the interpreter's path; empty when no host python is usable
	// (project mode then falls back to the embedded WASI CPython).
	Path string
	// Version is what the interpreter reported, e.g. "3.11.7".
	Version string
	// Source says where it came from: "VIRTUAL_ENV", "CONDA_PREFIX", "PATH"
	// or "embedded".
	Source string
	// Skipped lists candidates that were rejected, with the reason.
	Skipped []string
}

// Resolve finds the interpreter for project mode (SPEC §2): $VIRTUAL_ENV,
// then $CONDA_PREFIX (bin/python, bin/python3; Windows Scripts\python.exe),
// then python3 and python on PATH. Each candidate is probed for Python >=
// 3.8; a broken or too-old one is skipped with its reason.
func Resolve(ctx context.Context, getenv func(string) string) Choice {
	var c Choice
	for _, env := range []string{"VIRTUAL_ENV", "CONDA_PREFIX"} {
		prefix := getenv(env)
		if prefix == "" {
			continue
		}
		for _, cand := range envCandidates(prefix) {
			if _, err := os.Stat(cand); err != nil {
				continue
			}
			if v, err := probe(ctx, cand); err != nil {
				c.Skipped = append(c.Skipped, fmt.Sprintf("%s (%s): %v", cand, env, err))
			} else {
				c.Path, c.Version, c.Source = cand, v, env
				return c
			}
		}
	}
	for _, name := range []string{"python3", "python"} {
		p, err := exec.LookPath(name)
		if err != nil {
			continue
		}
		if v, err := probe(ctx, p); err != nil {
			c.Skipped = append(c.Skipped, fmt.Sprintf("%s (PATH): %v", p, err))
		} else {
			c.Path, c.Version, c.Source = p, v, "PATH"
			return c
		}
	}
	c.Source = "embedded"
	return c
}

func envCandidates(prefix string) []string {
	if goruntime.GOOS == "windows" {
		return []string{filepath.Join(prefix, "Scripts", "python.exe"), filepath.Join(prefix, "python.exe")}
	}
	return []string{filepath.Join(prefix, "bin", "python"), filepath.Join(prefix, "bin", "python3")}
}

// probe runs the interpreter to learn its version and checks the minimum.
func probe(ctx context.Context, path string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("does not run: %v", err)
	}
	v := strings.TrimSpace(string(out))
	parts := strings.Split(v, ".")
	if len(parts) < 2 {
		return "", fmt.Errorf("unexpected version %q", v)
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil {
		return "", fmt.Errorf("unexpected version %q", v)
	}
	if major < MinMajor || (major == MinMajor && minor < MinMinor) {
		return "", fmt.Errorf("Python %s is older than %d.%d", v, MinMajor, MinMinor)
	}
	return v, nil
}

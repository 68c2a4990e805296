// Package native finds the Python interpreter project mode runs on this
// host, as the executor chooses it: the working dir's virtualenv, an
// activated venv or conda env, a version manager's shim, else python3 on
// PATH (see [ResolveIn]), each probed for its version (3.8 or later) with
// the answers cached. It also names the transports of project mode's tool
// channel. An embedder can use it to show or check which interpreter a
// working dir selects; the engine that runs scripts on it is internal to
// the module (runtime/executor runs it).
package native

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hermes-agent/hermes-wasm-exec/internal/proctree"
)

// minMajor and minMinor are the oldest Python project mode accepts.
const (
	minMajor = 3
	minMinor = 8
)

// probeTimeout bounds one interpreter probe (a cold start of a big conda
// python on a slow disk can take seconds).
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
	// Shim is the version manager's shim (pyenv, asdf) Path was found
	// through, when it was: Path is then the interpreter the shim runs for
	// the session dir, started directly.
	Shim string
	// Skipped lists candidates that were rejected, with the reason.
	Skipped []string
	// Sites are the site-packages dirs of a virtualenv or conda env in the
	// working dir, found by [ResolveSandboxed] from its layout without
	// running it (Path is then empty).
	Sites []string
}

// Resolve finds the interpreter for project mode (docs/behaviour.md §2): $VIRTUAL_ENV,
// then $CONDA_PREFIX (bin/python, bin/python3; Windows Scripts\python.exe),
// then python3 and python on $PATH, all read through getenv. Each
// candidate is probed for Python >= 3.8 (once per file version, see
// probeCached); a broken or too-old one is skipped with its reason. When
// none is usable, Source is "embedded" and Path is empty.
func Resolve(ctx context.Context, getenv func(string) string) Choice {
	return ResolveIn(ctx, getenv, "", "")
}

// ResolveIn is Resolve for a session dir: a version manager's shim (pyenv,
// asdf; see shim.go) is asked which python it runs in dir (empty: this
// process's dir), and that interpreter is chosen instead of the shim.
// cacheFile, when not empty, keeps the probes' answers across processes
// (probecache.go).
func ResolveIn(ctx context.Context, getenv func(string) string, dir, cacheFile string) Choice {
	return resolveIn(ctx, getenv, dir, cacheFile, held{})
}

// ResolveSandboxed is ResolveIn for the sandboxed project mode, whose
// scripts change the working dir dir: it runs no interpreter that dir
// holds or selects (see held), since a script could have made it a
// program of its own, which the probe would run on the host, outside the
// sandbox. A virtualenv or conda env in dir is not run: its site-packages
// dirs are found from its layout (Choice.Sites). The probes get no PATH
// entry in dir either.
func ResolveSandboxed(ctx context.Context, getenv func(string) string, dir, cacheFile string) Choice {
	return resolveIn(ctx, getenv, dir, cacheFile, newHeld(dir))
}

func resolveIn(ctx context.Context, getenv func(string) string, dir, cacheFile string, h held) Choice {
	var c Choice
	try := func(cand, source string) bool {
		if why := h.interpreter(cand); why != "" {
			c.Skipped = append(c.Skipped, fmt.Sprintf("%s (%s): %s", cand, source, why))
			return false
		}
		path, shim := cand, ""
		var v string
		var err error
		if shimKind(cand) != "" {
			if why := h.shim(getenv, dir); why != "" {
				c.Skipped = append(c.Skipped, fmt.Sprintf("%s (%s): %s", cand, source, why))
				return false
			}
			shim = cand
			path, v, err = throughShim(ctx, cand, dir, getenv, cacheFile, h)
			if err == nil && path != shim {
				if why := h.interpreter(path); why != "" {
					c.Skipped = append(c.Skipped, fmt.Sprintf("%s (%s, through %s): %s", path, source, shim, why))
					return false
				}
			}
		} else {
			v, err = probeCached(ctx, cand, cacheFile, h)
		}
		if err != nil {
			c.Skipped = append(c.Skipped, fmt.Sprintf("%s (%s): %v", cand, source, err))
			return false
		}
		c.Path, c.Version, c.Source = path, v, source
		if path != shim {
			c.Shim = shim
		}
		return true
	}
	for _, env := range []string{"VIRTUAL_ENV", "CONDA_PREFIX"} {
		prefix := getenv(env)
		if prefix == "" {
			continue
		}
		if fi, err := os.Stat(prefix); err == nil && fi.IsDir() && h.holds(prefix) {
			c.Source, c.Sites = env, envSites(prefix)
			c.Skipped = append(c.Skipped, fmt.Sprintf("%s=%s: in the working dir, which a sandboxed script can change: not run, its site-packages found from its layout", env, prefix))
			return c
		}
		found := false
		for _, cand := range envCandidates(prefix) {
			if _, err := os.Stat(cand); err != nil {
				continue
			}
			found = true
			if try(cand, env) {
				return c
			}
		}
		if !found {
			c.Skipped = append(c.Skipped, fmt.Sprintf("%s=%s: no python in it (looked for %s)", env, prefix, strings.Join(envCandidates(prefix), ", ")))
		}
	}
	for _, name := range []string{"python3", "python"} {
		if p := lookPath(name, h.path(getenv("PATH")), getenv("PATHEXT")); p != "" && try(p, "PATH") {
			return c
		}
	}
	c.Source = "embedded"
	return c
}

// Describe says what the choice means, in one line, for logs and doctor.
func (c Choice) Describe() string {
	if c.Path == "" {
		return "no usable python on this host: project mode runs the embedded WASI CPython over the session dir (standard library only)"
	}
	if c.Shim != "" {
		return fmt.Sprintf("%s (Python %s, from %s through the shim %s, started directly)", c.Path, c.Version, c.Source, c.Shim)
	}
	return fmt.Sprintf("%s (Python %s, from %s)", c.Path, c.Version, c.Source)
}

// lookPath finds an executable name in the dirs of path, as a shell would.
func lookPath(name, path, pathext string) string {
	exts := []string{""}
	if goruntime.GOOS == "windows" {
		exts = nil
		if pathext == "" {
			pathext = ".COM;.EXE;.BAT;.CMD"
		}
		for _, e := range strings.Split(strings.ToLower(pathext), ";") {
			if e != "" {
				exts = append(exts, e)
			}
		}
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue // never the current dir: the session dir is not trusted to supply python
		}
		for _, ext := range exts {
			p := filepath.Join(dir, name+ext)
			fi, err := os.Stat(p)
			if err != nil || fi.IsDir() {
				continue
			}
			if goruntime.GOOS != "windows" && fi.Mode()&0o111 == 0 {
				continue
			}
			return p
		}
	}
	return ""
}

// probeCached probes an interpreter once per file version (path, size and
// modification time), for the life of the process and, through cacheFile,
// across processes: resolving is then a few stat calls, not a python start
// per run.
func probeCached(ctx context.Context, path, cacheFile string, h held) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("does not exist: %v", err)
	}
	key := fmt.Sprintf("probe\x00%s\x00%d\x00%d", path, fi.Size(), fi.ModTime().UnixNano())
	_, v, err := cachedProbe(ctx, key, cacheFile, func() (string, string, error) {
		v, err := probe(ctx, path, h)
		return path, v, err
	})
	return v, err
}

func envCandidates(prefix string) []string {
	if goruntime.GOOS == "windows" {
		return []string{filepath.Join(prefix, "Scripts", "python.exe"), filepath.Join(prefix, "python.exe")}
	}
	return []string{filepath.Join(prefix, "bin", "python"), filepath.Join(prefix, "bin", "python3")}
}

// probe runs the interpreter to learn its version and checks the minimum.
func probe(ctx context.Context, path string, h held) (string, error) {
	out, err := runProbe(ctx, path, "", probeTimeout, h, "import sys; print('%d.%d.%d' % sys.version_info[:3])")
	if err != nil {
		return "", err
	}
	return checkVersion(out)
}

// runProbe runs path -s -c code in dir (empty: this process's) and
// returns what it printed. code must import nothing that is not imported
// already: -c puts the cwd first on sys.path. -s leaves out the user's
// site dir, whose .pth files python runs at start: one a sandboxed script
// wrote there (a working dir that is the user's home holds ~/.local) ran
// on the host at the next probe.
func runProbe(ctx context.Context, path, dir string, timeout time.Duration, h held, code string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.Command(path, "-s", "-c", code)
	cmd.Dir = dir
	cmd.WaitDelay = time.Second
	// The probe learns a version; it gets no secrets to learn it with (a
	// shim needs its manager's variables to choose the same python).
	for _, k := range []string{"PATH", "HOME", "SYSTEMROOT", "TMPDIR", "TEMP", "TMP", "PYENV_ROOT", "PYENV_VERSION", "ASDF_DIR", "ASDF_DATA_DIR", "ASDF_PYTHON_VERSION"} {
		if v, ok := os.LookupEnv(k); ok {
			if k == "PATH" {
				v = h.path(v)
			}
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	var out bytes.Buffer
	cmd.Stdout = &out
	// In a tree of its own like every process the executor starts: the
	// registry of its children must know it (proctree.EnableSubreaper),
	// and whatever it starts ends with it.
	if err := proctree.Run(ctx, cmd); err != nil {
		return "", fmt.Errorf("does not run: %v", err)
	}
	return out.String(), nil
}

// checkVersion parses a probe's "major.minor.micro" and checks the minimum.
func checkVersion(out string) (string, error) {
	v := strings.TrimSpace(out)
	parts := strings.Split(v, ".")
	if len(parts) < 2 {
		return "", fmt.Errorf("unexpected version %q", v)
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil {
		return "", fmt.Errorf("unexpected version %q", v)
	}
	if major < minMajor || (major == minMajor && minor < minMinor) {
		return "", tooOldError(v)
	}
	return v, nil
}

// tooOldError is a python older than MinMajor.MinMinor; its text names
// the version as the "python skipped" warning shows it.
type tooOldError string

func (v tooOldError) Error() string {
	return fmt.Sprintf("Python %s is older than %d.%d", string(v), minMajor, minMinor)
}

// SiteDirs returns the existing site-packages and dist-packages dirs on
// the interpreter python's sys.path (its virtualenv's, the user's, the
// system's), learnt once per interpreter file version (probed as
// [Resolve] probes, cached in cacheFile): the pure-Python packages the
// sandboxed project mode makes importable. nil when it cannot tell.
// workdir is the sandboxed working dir: the probe gets no PATH entry in
// it (python should come from [ResolveSandboxed]).
func SiteDirs(ctx context.Context, python, workdir, cacheFile string) []string {
	h := newHeld(workdir)
	fi, err := os.Stat(python)
	if err != nil {
		return nil
	}
	// "sites2": the answer is one dir a line (the first version's was
	// JSON).
	key := fmt.Sprintf("sites2\x00%s\x00%d\x00%d", python, fi.Size(), fi.ModTime().UnixNano())
	_, list, err := cachedProbe(ctx, key, cacheFile, func() (string, string, error) {
		// No import, and the cwd off sys.path first: python -c puts it
		// there, and it may be the working dir, where a sandboxed script
		// wrote json.py, which "import json" here ran on the host. The
		// user's site dir (which -s leaves out, see runProbe) is asked of
		// the site module the interpreter imported at start, unless it is
		// an isolated virtualenv's (whose site dirs are its own only).
		out, err := runProbe(ctx, python, "", probeTimeout, h,
			"import sys; sys.path[:] = [p for p in sys.path if p not in ('', '.')]; s = sys.modules.get('site'); "+
				"u = [s.getusersitepackages()] if s and (sys.prefix == sys.base_prefix or sys.base_prefix in s.PREFIXES) else []; "+
				"print('\\n'.join([p for p in sys.path if p.rstrip('/\\\\').endswith(('site-packages', 'dist-packages'))] + u))")
		return python, strings.TrimSpace(out), err
	})
	if err != nil {
		return nil
	}
	var out []string
	for _, d := range strings.Split(list, "\n") {
		d = strings.TrimSpace(d)
		if !filepath.IsAbs(d) {
			continue
		}
		if fi, err := os.Stat(d); err == nil && fi.IsDir() && !slices.Contains(out, filepath.Clean(d)) {
			out = append(out, filepath.Clean(d))
		}
	}
	return out
}

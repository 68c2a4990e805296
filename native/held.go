package native

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
)

// held is the working dir of the sandboxed project mode, as the python
// resolution sees it (see ResolveSandboxed): a sandboxed script writes
// there what the file tools' rules allow, so the executor runs nothing
// that the dir holds or selects. Python is no sandbox: a virtualenv's
// bin/python, pyvenv.cfg or standard library, a shim's version file or a
// PATH entry in the working dir let a script make the next probe run its
// own program on the host. The zero value holds nothing (ResolveIn).
type held struct {
	dir, real string // the dir as given (absolute, clean) and resolved
}

// newHeld returns the held view of dir ("" holds nothing).
func newHeld(dir string) held {
	if dir == "" {
		return held{}
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return held{}
	}
	return held{dir: abs, real: resolvedOrSelf(abs)}
}

// resolvedOrSelf is p with its symlinks resolved, as far as it exists.
func resolvedOrSelf(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	if parent := filepath.Dir(p); parent != p {
		return filepath.Join(resolvedOrSelf(parent), filepath.Base(p))
	}
	return p
}

// inside reports whether p (absolute, clean) is base or lies below it.
func inside(p, base string) bool {
	if goruntime.GOOS == "windows" || goruntime.GOOS == "darwin" {
		p, base = strings.ToLower(p), strings.ToLower(base)
	}
	rel, err := filepath.Rel(base, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// holds reports whether p lies in the working dir, as written or resolved.
func (h held) holds(p string) bool {
	if h.dir == "" || p == "" {
		return false
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return true
	}
	return inside(abs, h.dir) || inside(abs, h.real) || inside(resolvedOrSelf(abs), h.real)
}

// heldWhy is why a candidate the working dir holds is not run.
const heldWhy = "in the working dir, which a sandboxed script can change: not run"

// interpreter is why the interpreter (or shim) cand is not run, or "": it,
// the file it resolves to, or the installation around it (the dir above
// its bin dir: a virtualenv's pyvenv.cfg, its standard library) lies in
// the working dir, or so does the home its pyvenv.cfg names.
func (h held) interpreter(cand string) string {
	if h.dir == "" {
		return ""
	}
	real := resolvedOrSelf(cand)
	for _, p := range []string{cand, real, filepath.Dir(filepath.Dir(cand)), filepath.Dir(filepath.Dir(real))} {
		if h.holds(p) {
			return heldWhy
		}
	}
	for _, cfg := range []string{filepath.Join(filepath.Dir(cand), "pyvenv.cfg"), filepath.Join(filepath.Dir(filepath.Dir(cand)), "pyvenv.cfg")} {
		if home := pyvenvHome(cfg); home != "" && h.holds(home) {
			return "its " + cfg + " names a home in the working dir, which a sandboxed script can change: not run"
		}
	}
	return ""
}

// shim is why a version manager's shim is not run in dir, or "": a
// version file it reads that lies in the working dir (a script may have
// written it) names a python by path, which the shim would run: asdf's
// "python path:/dir", a pyenv version with a path in it (pyenv refuses
// one that leaves its versions dir since 2.3.2; older ones ran it).
func (h held) shim(getenv func(string) string, dir string) string {
	if h.dir == "" {
		return ""
	}
	home := getenv("HOME")
	pyenvRoot := getenv("PYENV_ROOT")
	if pyenvRoot == "" && home != "" {
		pyenvRoot = filepath.Join(home, ".pyenv")
	}
	files := []string{nearest(dir, ".python-version"), nearest(dir, ".tool-versions")}
	if home != "" {
		files = append(files, filepath.Join(home, ".tool-versions"))
	}
	if pyenvRoot != "" {
		files = append(files, filepath.Join(pyenvRoot, "version"))
	}
	for _, f := range files {
		if f == "" || !h.holds(f) {
			continue
		}
		if v := pathVersion(f); v != "" {
			return "the version file " + f + " in the working dir names python " + v + ", a path a sandboxed script may have written: not run"
		}
	}
	return ""
}

// path is the PATH list value without its entries in the working dir or
// relative ones (the cwd): a probe's shim finds its shell through PATH
// (#!/usr/bin/env bash).
func (h held) path(value string) string {
	if h.dir == "" {
		return value
	}
	var keep []string
	for _, d := range filepath.SplitList(value) {
		if d != "" && filepath.IsAbs(d) && !h.holds(d) {
			keep = append(keep, d)
		}
	}
	return strings.Join(keep, string(os.PathListSeparator))
}

// pathVersion returns the first python version in the version file f
// (.python-version: every word; .tool-versions: the words after
// "python") that names a path, or "".
func pathVersion(f string) string {
	file, err := os.Open(f)
	if err != nil {
		return ""
	}
	defer file.Close()
	tool := filepath.Base(f) == ".tool-versions"
	sc := bufio.NewScanner(io.LimitReader(file, 1<<20))
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		words := strings.Fields(line)
		if tool {
			if len(words) == 0 || words[0] != "python" {
				continue
			}
			words = words[1:]
		}
		for _, v := range words {
			if strings.HasPrefix(v, "path:") || strings.ContainsAny(v, `/\`) || strings.Contains(v, "..") {
				return v
			}
		}
	}
	return ""
}

// pyvenvHome is the home key of the pyvenv.cfg file cfg, or "".
func pyvenvHome(cfg string) string {
	file, err := os.Open(cfg)
	if err != nil {
		return ""
	}
	defer file.Close()
	sc := bufio.NewScanner(io.LimitReader(file, 1<<20))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "=")
		if ok && strings.EqualFold(strings.TrimSpace(k), "home") {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// envSites are the site-packages dirs of the virtualenv or conda env at
// prefix, from its layout: lib/pythonX.Y/site-packages (Lib/site-packages
// on Windows).
func envSites(prefix string) []string {
	var out []string
	patterns := []string{filepath.Join(prefix, "lib", "python3*", "site-packages")}
	if goruntime.GOOS == "windows" {
		patterns = []string{filepath.Join(prefix, "Lib", "site-packages")}
	}
	for _, pat := range patterns {
		matches, _ := filepath.Glob(pat)
		for _, m := range matches {
			if fi, err := os.Stat(m); err == nil && fi.IsDir() {
				out = append(out, filepath.Clean(m))
			}
		}
	}
	return out
}

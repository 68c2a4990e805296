package hostfuncs

// File safety: the checks read_file, write_file, patch and search_files run
// on a path before they touch it. The rules and messages are Hermes's
// (agent/file_safety.py and tools/file_tools.py), so a tool called from a
// script refuses what the same tool called directly refuses.
//
// # Security
//
// This is defence in depth, not a security boundary: terminal runs commands
// as the same user and can read or write every one of these files. The
// checks give a model that respects tool errors a clear refusal, and make a
// script that reaches for credentials visible in the tool-call log. Paths
// are judged after symlinks (and Windows junctions) are resolved, in any
// letter case where the file system folds case, and on Windows as the file
// the OS opens (see realPathIn); a file with more than one hard link is
// also judged by the protected names it shares its identity with (see
// hardlink.go). What can still get through is a symlink swapped between
// the check and the write (the tools do not hold the path open), a hard
// link to a protected file the run does not find (hardlink.go says where
// it looks), and anything terminal does.

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/internal/backend"
)

// WriteSafeRootEnv names the host environment variable that confines
// write_file and patch to a list of directories (separated by
// os.PathListSeparator). The executor reads it from its own environment and
// passes it in [Options].WriteSafeRoot; a script cannot set it.
const WriteSafeRootEnv = "HERMES_WRITE_SAFE_ROOT"

// confineKey is the configuration key that confines the file tools to the
// session working directory; refusals name it so the user knows what to
// change.
const confineKey = "code_execution.confine_tools_to_workdir"

// notABoundary ends Hermes's read refusals.
const notABoundary = " (Defense-in-depth — not a security boundary; the terminal tool can still bypass.)"

var (
	// protectedHomeFiles are never written (relative to the user's home).
	protectedHomeFiles = []string{
		".ssh/authorized_keys", ".ssh/id_rsa", ".ssh/id_ed25519",
		".netrc", ".pgpass", ".npmrc", ".pypirc", ".git-credentials",
	}
	// protectedHomeDirs are never written into (relative to the user's
	// home). ~/.ssh/config is inside ~/.ssh: Hermes gates it behind an
	// approval, which a script's file tools cannot ask for, so it fails
	// closed like Hermes's non-interactive callers.
	protectedHomeDirs = []string{".ssh", ".aws", ".gnupg", ".kube", ".docker", ".azure", ".config/gh", ".config/gcloud"}
	// protectedSystemFiles and protectedSystemDirs are never written
	// (POSIX hosts only).
	protectedSystemFiles = []string{"/etc/sudoers", "/etc/passwd", "/etc/shadow"}
	protectedSystemDirs  = []string{"/etc/sudoers.d", "/etc/systemd"}
	// hermesWriteFiles are credential stores in a Hermes home that are
	// never written.
	hermesWriteFiles = []string{".env", ".anthropic_oauth.json", "cache/bws_cache.enc.json"}
	// hermesWriteDirs are Hermes-owned state in a Hermes home that the file
	// tools never write: transcripts (rewriting them falsifies history) and
	// token stores.
	hermesWriteDirs = []string{"state.db", "sessions", "mcp-tokens", "pairing"}
	// sensitiveSystemDirs and sensitiveSystemFiles are system locations
	// Hermes's file tools refuse, pointing at terminal and sudo instead
	// (POSIX hosts only). Hermes also lists /private/var/, which holds
	// every macOS user's temporary directory (where session dirs live); it
	// is left out on purpose.
	sensitiveSystemDirs  = []string{"/etc", "/boot", "/usr/lib/systemd", "/private/etc"}
	sensitiveSystemFiles = []string{"/var/run/docker.sock", "/run/docker.sock"}

	// hermesReadFiles are credential stores in a Hermes home that are
	// never read.
	hermesReadFiles = []string{"auth.json", "auth.lock", ".anthropic_oauth.json", ".env",
		"webhook_subscriptions.json", "auth/google_oauth.json", "cache/bws_cache.json"}
	// hermesReadDirs are directories in a Hermes home whose contents are
	// never read, with Hermes's message for the directory and for a file
	// inside.
	hermesReadDirs = []struct{ rel, dirMsg, fileMsg string }{
		{"mcp-tokens",
			"is the Hermes MCP token directory and cannot be read directly.",
			"is a Hermes MCP token file and cannot be read directly."},
		{"browser-profile",
			"is the Hermes real-profile browser snapshot directory (copied cookies/logins) and cannot be read directly.",
			"is inside the Hermes real-profile browser snapshot (copied cookies/logins) and cannot be read directly."},
	}
	// projectEnvNames are Hermes's secret-bearing env files, refused
	// anywhere on disk (compared lower-case); isProjectEnv adds the rest of
	// the .env family.
	projectEnvNames = []string{".env", ".env.local", ".env.development", ".env.production", ".env.test", ".env.staging", ".envrc"}
	// envTemplateParts mark an env file that is a template, meant to be
	// read and committed (.env.example, .env.local.sample, example.env):
	// isProjectEnv lets a name with one of them as a dot-separated part
	// through.
	envTemplateParts = []string{"example", "sample", "template", "dist"}
)

// expandHome replaces a leading "~" (alone or followed by a separator) with
// the user's home directory, looked up at call time. Other paths, and "~"
// when there is no home directory, are returned unchanged.
func expandHome(p string) string {
	if p != "~" && !strings.HasPrefix(p, "~/") && !(filepath.Separator == '\\' && strings.HasPrefix(p, `~\`)) {
		return p
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		return p
	}
	return filepath.Join(home, p[1:])
}

// realPath resolves every symlink in the absolute host path p, like
// Python's os.path.realpath: components that exist are resolved (dangling
// links too: a write through one creates its target), and the part from
// the first missing component on is appended lexically. It fails only on a
// symlink loop or an unreadable link.
func realPath(p string) (string, error) { return realPathIn(backend.LocalFS, pathSyntax{}, p) }

// realOrSelf is realPath(p), or p when it cannot be resolved.
func realOrSelf(p string) string {
	if r, err := realPath(p); err == nil {
		return r
	}
	return p
}

// realPath is realPath in the backend's file system.
func (t *Tools) realPath(p string) (string, error) { return realPathIn(t.fs, t.px, p) }

// realOrSelf is t.realPath(p), or p when it cannot be resolved.
func (t *Tools) realOrSelf(p string) string {
	if r, err := t.realPath(p); err == nil {
		return r
	}
	return p
}

// realPathIn is realPath in fsys, whose paths have syntax px.
//
// On Windows it also undoes the spellings under which one file goes by
// several names, so that the path judged is the file the OS opens: a
// \\?\ or \\.\ device prefix, trailing dots and spaces of a name (which
// Win32 drops), an NTFS stream suffix (name:stream, name::$DATA: a write
// to a stream of a protected file is judged as a write to the file),
// 8.3 short names (RUNNER~1), and directory junctions, which an
// unprivileged user can create and Go's Lstat does not report as
// symlinks.
func realPathIn(fsys backend.FS, px pathSyntax, p string) (string, error) {
	win := px.windows()
	if win {
		p = winStripDevicePrefix(p)
	}
	vol := px.volumeName(p)
	resolved := vol + px.sep()
	pending := px.split(p[len(vol):])
	hops := 0
	for len(pending) > 0 {
		name := pending[0]
		pending = pending[1:]
		if win {
			if name = winName(name); name == "" {
				continue
			}
		}
		switch name {
		case ".":
			continue
		case "..":
			resolved = px.dir(resolved)
			continue
		}
		next := px.join(resolved, name)
		fi, err := fsys.Lstat(next)
		if err != nil {
			// Missing (or unreadable): nothing below it can be a link the
			// OS would follow, so the rest is lexical.
			return finishRealPath(px, px.join(append([]string{next}, pending...)...)), nil
		}
		var dest string
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			if dest, err = fsys.Readlink(next); err != nil {
				return "", err
			}
		case fi.Mode()&fs.ModeIrregular != 0 && fi.IsDir():
			// A Windows junction (mount point) is a directory the OS
			// redirects like a symlink; another reparse point that is not
			// a link (a cloud placeholder) has no link target.
			if dest, err = fsys.Readlink(next); err != nil {
				resolved = next
				continue
			}
		default:
			resolved = next
			continue
		}
		if hops++; hops > maxSymlinkHops {
			return "", &fs.PathError{Op: "resolve", Path: p, Err: syscall.ELOOP}
		}
		if win {
			dest = winStripDevicePrefix(dest)
		}
		if px.isAbs(dest) {
			v := px.volumeName(dest)
			resolved = v + px.sep()
			dest = dest[len(v):]
		}
		pending = append(px.split(dest), pending...)
	}
	return finishRealPath(px, resolved), nil
}

// finishRealPath expands Windows 8.3 short names in p (see longPathName);
// other paths are returned as they are.
func finishRealPath(px pathSyntax, p string) string {
	if px.windows() && strings.Contains(p, "~") {
		return longPathName(p)
	}
	return p
}

// foldCase reports whether paths compare case-insensitively: the default
// file systems of macOS and Windows do, so ~/.SSH is ~/.ssh there.
var foldCase = goruntime.GOOS == "darwin" || goruntime.GOOS == "windows"

// within reports whether the host path p is base or lies below it. Both
// are absolute and clean.
func within(p, base string) bool { return pathSyntax{}.within(p, base) }

// safetyPolicy is the file-safety view of one tool call: the protected
// locations with their symlinks resolved (so a symlinked ~/.ssh protects its
// target, and /etc is also /private/etc on macOS). It is built once per
// Tools and again when HOME or HERMES_HOME changes (see policyCache), and
// then only compares strings.
type safetyPolicy struct {
	px pathSyntax // the syntax of the paths judged (the zero value: the host's)
	// anyHome (a remote backend) refuses the home-relative credential
	// files and dirs (protectedHomeFiles, protectedHomeDirs) under any
	// directory, the target's home not being known.
	anyHome                       bool
	writeFiles, writeDirs         []string // "protected system/credential file"
	sensitiveFiles, sensitiveDirs []string // "sensitive system path"
	configFiles                   []string // Hermes config.yaml
	cacheDirs                     []string // the executor's caches
	packageDirs                   []string // code_execution.wasm_packages
	tempRoots                     []string // where runs stage their private dirs
	hubDirs                       []string // skills/.hub caches
	readFiles                     []string // Hermes credential stores
	readDirs                      []readDir
}

// readDir is a directory whose contents are never read.
type readDir struct{ path, dirMsg, fileMsg string }

// policy returns the safety policy for a call on paths (absolute). Every
// Hermes home is protected, and so is every profile under one of them that
// a path lies in, whether or not it exists yet: a profile's cache and
// config are loaded by the executor that runs with it.
func (t *Tools) policy(paths ...string) safetyPolicy {
	if t.remote() {
		return t.remotePolicy(paths...)
	}
	p, homes := t.basePolicy()
	var extra []string
	for _, hd := range homes {
		for _, path := range paths {
			if prof := profileOf(p.px, path, hd); prof != "" && !slices.Contains(homes, prof) && !slices.Contains(extra, prof) {
				extra = append(extra, prof)
			}
		}
	}
	for _, hd := range extra {
		p.addHome(hd, realOrSelf) // p's lists are clipped: this appends to copies
	}
	return p
}

// remotePolicy is the safety policy of a remote backend for a call on
// paths (absolute POSIX paths of the target). The rules are the host's,
// evaluated on the target's paths, without what only names this host: its
// Hermes home (Options.HermesHome, $HERMES_HOME), its wasm cache dir, its
// temp dir and HERMES_WRITE_SAFE_ROOT (see checkWrite). Knowing the
// target's home or HERMES_HOME would take a round trip, so:
//   - the credential files and dirs of a user's home (~/.ssh, ~/.netrc,
//     ~/.aws, ...) are refused under any directory (anyHome);
//   - every directory named .hermes on the paths is a Hermes home (also
//     resolved through the target's symlinks), with its existing profiles
//     and the profile a path lies in;
//   - the system files and dirs are the POSIX ones, and the run staging
//     dirs are the ones under /tmp.
//
// Protected locations other than the Hermes homes are compared as
// written: the checks judge both a path as given and as resolved.
func (t *Tools) remotePolicy(paths ...string) safetyPolicy {
	px := t.px
	p := safetyPolicy{px: px, anyHome: true}
	p.writeFiles = slices.Clone(protectedSystemFiles)
	p.writeDirs = slices.Clone(protectedSystemDirs)
	p.sensitiveFiles = slices.Clone(sensitiveSystemFiles)
	p.sensitiveDirs = slices.Clone(sensitiveSystemDirs)
	p.tempRoots = []string{"/tmp"}
	var homes []string
	add := func(hd string) {
		for _, d := range []string{hd, t.realOrSelf(hd)} {
			if !slices.Contains(homes, d) {
				homes = append(homes, d)
			}
		}
	}
	for _, path := range paths {
		for d := path; ; {
			if px.base(d) == ".hermes" {
				add(d)
			}
			parent := px.dir(d)
			if parent == d {
				break
			}
			d = parent
		}
	}
	for _, hd := range slices.Clone(homes) {
		profiles := px.join(hd, "profiles")
		if entries, err := t.fs.ReadDir(profiles); err == nil {
			for _, e := range entries {
				if prof := px.join(profiles, e.Name()); e.IsDir() && !slices.Contains(homes, prof) {
					homes = append(homes, prof)
				}
			}
		}
		for _, path := range paths {
			if prof := profileOf(px, path, hd); prof != "" && !slices.Contains(homes, prof) {
				homes = append(homes, prof)
			}
		}
	}
	for _, hd := range homes {
		p.addHome(hd, func(s string) string { return s })
	}
	return p
}

// inAnyHome reports whether path is one of the home-relative credential
// files or lies in one of the home-relative credential dirs, under any
// directory (a POSIX path).
func inAnyHome(path string) bool {
	for _, f := range protectedHomeFiles {
		if strings.HasSuffix(path, "/"+f) {
			return true
		}
	}
	for _, d := range protectedHomeDirs {
		if strings.HasSuffix(path, "/"+d) || strings.Contains(path, "/"+d+"/") {
			return true
		}
	}
	return false
}

// policyCache holds a Tools' policy for the inputs it was built from.
// Resolving the protected locations takes ~0.1 ms (a hundred lstat calls),
// more than a whole read_file of a small file, so it is built once per
// Tools (a run) and again only when HOME, HERMES_HOME, the temp dir or the
// cache dir changes.
type policyCache struct {
	mu    sync.Mutex
	key   string
	p     safetyPolicy
	homes []string
}

// policyInputs returns what the base policy is built from: the user's home
// ("" when unknown) and the wasm cache dir, and a key naming them with
// the rest (the Hermes home, the temp dir).
func (t *Tools) policyInputs() (home, wasm, key string) {
	home, err := os.UserHomeDir()
	if err != nil {
		home = ""
	}
	wasm = t.wasmCacheDir
	if wasm == "" {
		wasm = os.Getenv(config.CacheDirEnv)
	}
	key = strings.Join(append([]string{home, t.hermesHome, os.Getenv("HERMES_HOME"), os.TempDir(), wasm, t.sessionStore}, t.wasmPackages...), "\x00")
	return home, wasm, key
}

// basePolicy returns the policy of the Hermes homes and their existing
// profiles, and the homes, built or taken from t's cache.
func (t *Tools) basePolicy() (safetyPolicy, []string) {
	home, wasm, key := t.policyInputs()
	c := &t.policyCache
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.key != key || c.homes == nil {
		c.p, c.homes = buildPolicy(home, t.hermesHome, wasm, t.wasmPackages, t.sessionStore)
		c.key = key
	}
	return c.p, c.homes
}

// buildPolicy resolves every protected location: under home (the user's
// home, "" when unknown), in every Hermes home (hermesHome, see hermesDirs)
// and each of its existing profiles, the system's, the temp dir's run dirs
// the wasm cache dir and the package dirs of code_execution.wasm_packages
// (packages). Its lists are clipped, so that appending to a copy never
// writes into them.
func buildPolicy(home, hermesHome, wasm string, packages []string, store string) (safetyPolicy, []string) {
	var p safetyPolicy
	if home != "" {
		home = filepath.Clean(home)
		for _, f := range protectedHomeFiles {
			p.writeFiles = both(p.writeFiles, filepath.Join(home, filepath.FromSlash(f)))
		}
		for _, d := range protectedHomeDirs {
			p.writeDirs = both(p.writeDirs, filepath.Join(home, filepath.FromSlash(d)))
		}
	}
	if goruntime.GOOS != "windows" {
		for _, f := range protectedSystemFiles {
			p.writeFiles = both(p.writeFiles, f)
		}
		for _, d := range protectedSystemDirs {
			p.writeDirs = both(p.writeDirs, d)
		}
		for _, f := range sensitiveSystemFiles {
			p.sensitiveFiles = both(p.sensitiveFiles, f)
		}
		for _, d := range sensitiveSystemDirs {
			p.sensitiveDirs = both(p.sensitiveDirs, d)
		}
	}
	homes := hermesDirs(hermesHome, home)
	for _, hd := range slices.Clone(homes) {
		existing, _ := filepath.Glob(filepath.Join(hd, "profiles", "*"))
		for _, prof := range existing {
			if !slices.Contains(homes, prof) {
				homes = append(homes, prof)
			}
		}
	}
	for _, hd := range homes {
		p.addHome(hd, realOrSelf)
	}
	if tmp, err := filepath.Abs(os.TempDir()); err == nil {
		p.tempRoots = both(p.tempRoots, tmp)
	}
	if wasm != "" {
		// Both readings of a "~": the executor takes the value as it is
		// (a literal "~" dir under its working dir), a shell would expand it.
		for _, w := range []string{wasm, expandHome(wasm)} {
			if abs, err := filepath.Abs(w); err == nil {
				p.cacheDirs = both(p.cacheDirs, abs)
			}
		}
	}
	for _, d := range packages {
		if abs, err := filepath.Abs(expandHome(d)); err == nil {
			p.packageDirs = both(p.packageDirs, abs)
		}
	}
	if store != "" {
		// Every session's suspended kernels: no tool reads or lists them
		// either (write_file and patch refuse it as a package dir does).
		if abs, err := filepath.Abs(store); err == nil {
			for _, d := range []string{abs, realOrSelf(abs)} {
				p.readDirs = append(p.readDirs, readDir{d,
					"is the session store, which holds every session's suspended kernels, and cannot be listed or searched.",
					"is in the session store, which holds every session's suspended kernels, and cannot be read."})
			}
		}
	}
	p.packageDirs = slices.Clip(p.packageDirs)
	p.writeFiles, p.writeDirs = slices.Clip(p.writeFiles), slices.Clip(p.writeDirs)
	p.sensitiveFiles, p.sensitiveDirs = slices.Clip(p.sensitiveFiles), slices.Clip(p.sensitiveDirs)
	p.configFiles, p.cacheDirs, p.tempRoots = slices.Clip(p.configFiles), slices.Clip(p.cacheDirs), slices.Clip(p.tempRoots)
	p.hubDirs, p.readFiles, p.readDirs = slices.Clip(p.hubDirs), slices.Clip(p.readFiles), slices.Clip(p.readDirs)
	return p, homes
}

// both appends abs and, when it differs, what it resolves to.
func both(list []string, abs string) []string {
	return append(list, abs, realOrSelf(abs))
}

// addHome adds the protected locations of the Hermes home hd, each passed
// through resolve (realOrSelf on the host).
func (p *safetyPolicy) addHome(hd string, resolve func(string) string) {
	in := func(rel string) string { return resolve(p.px.join(hd, p.px.fromSlash(rel))) }
	for _, f := range hermesWriteFiles {
		p.writeFiles = append(p.writeFiles, in(f))
	}
	for _, d := range hermesWriteDirs {
		p.writeDirs = append(p.writeDirs, in(d))
	}
	p.configFiles = append(p.configFiles, in("config.yaml"))
	p.cacheDirs = append(p.cacheDirs, in("cache"))
	p.hubDirs = append(p.hubDirs, in("skills/.hub"))
	for _, f := range hermesReadFiles {
		p.readFiles = append(p.readFiles, in(f))
	}
	for _, d := range hermesReadDirs {
		p.readDirs = append(p.readDirs, readDir{in(d.rel), d.dirMsg, d.fileMsg})
	}
}

// stagingPrefixes name the private dirs runs create under the temp dir:
// strict staging and bytecode builds (runtime/internal/strict/strict.go, bytecode.go), the
// project child's and kernel's dirs and the RPC socket dir (native/).
var stagingPrefixes = []string{"hermes-strict-", "hermes-pyc-", "hermes-project-", "hermes-kernel-", "hrpc-"}

// profileOf returns the profile home (<root>/profiles/<name>) that path
// lies in under the Hermes home root, or "" (paths of syntax px).
func profileOf(px pathSyntax, path, root string) string {
	profiles := px.join(root, "profiles")
	if !px.within(path, profiles) {
		return ""
	}
	rel, err := px.rel(profiles, path)
	if err != nil || rel == "." {
		return ""
	}
	name, _, _ := strings.Cut(px.toSlash(rel), "/")
	return px.join(profiles, name)
}

// stagingDirOf returns the run staging dir path lies in, or "" (paths of
// syntax px).
func stagingDirOf(px pathSyntax, path string, tempRoots []string) string {
	for _, root := range tempRoots {
		rel, err := px.rel(root, path)
		if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
			continue
		}
		first, _, _ := strings.Cut(px.toSlash(rel), "/")
		for _, prefix := range stagingPrefixes {
			if strings.HasPrefix(px.key(first), prefix) {
				return px.join(root, first)
			}
		}
	}
	return ""
}

// hermesDirs lists the Hermes homes whose stores are protected, resolved:
// hermesHome (else $HERMES_HOME, else ~/.hermes), the root above it when it
// is a profile (<root>/profiles/<name>: the root's stores are shared by
// every profile), and ~/.hermes.
func hermesDirs(hermesHome, home string) []string {
	var dirs []string
	add := func(d string) {
		if d == "" {
			return
		}
		if abs, err := filepath.Abs(expandHome(d)); err == nil {
			if d = realOrSelf(abs); !slices.Contains(dirs, d) {
				dirs = append(dirs, d)
			}
		}
	}
	hh := hermesHome
	if hh == "" {
		hh = os.Getenv("HERMES_HOME")
	}
	if hh == "" && home != "" {
		hh = filepath.Join(home, ".hermes")
	}
	add(hh)
	if hh != "" {
		if parent := filepath.Dir(filepath.Clean(expandHome(hh))); (pathSyntax{}).key(filepath.Base(parent)) == "profiles" {
			add(filepath.Dir(parent))
		}
	}
	if home != "" {
		add(filepath.Join(home, ".hermes"))
	}
	return dirs
}

// matches reports whether path equals one of files or lies within one of
// dirs.
func (p safetyPolicy) matches(path string, files, dirs []string) bool {
	key := p.px.key(path)
	for _, f := range files {
		if p.px.key(f) == key {
			return true
		}
	}
	for _, d := range dirs {
		if p.px.within(path, d) {
			return true
		}
	}
	return false
}

// writeBlock returns why writing path (absolute, clean) is refused by the
// fixed lists, or "". Like Hermes, the "denied" message names shown (see
// checkWrite) and the "Refusing" ones the path as given.
func (p safetyPolicy) writeBlock(verb, shown, given, path string) string {
	if p.matches(path, p.writeFiles, p.writeDirs) || p.anyHome && inAnyHome(path) {
		return fmt.Sprintf("%s denied: '%s' is a protected system/credential file.", verb, shown)
	}
	// The executor runs what it finds there: wazero's compilation cache
	// holds native code checked only by a CRC32, and the .pyc cache
	// bytecode every strict run imports. A script that could rewrite them
	// would run its own code in the host process on the next run.
	for _, d := range p.cacheDirs {
		if p.px.within(path, d) {
			return fmt.Sprintf("%s denied: '%s' is in the executor's cache (%s), which the file tools never write: "+
				"the executor loads compiled code from it. Write the file somewhere else.", verb, shown, d)
		}
	}
	// Every strict and sandboxed run of every session imports the modules
	// of code_execution.wasm_packages: a script (or a sandboxed one's own
	// open()) that rewrote one ran its code in other sessions' runs, with
	// their files and tools.
	for _, d := range p.packageDirs {
		if p.px.within(path, d) {
			return fmt.Sprintf("%s denied: '%s' is in a package dir of code_execution.wasm_packages (%s), which the file tools never write: "+
				"every strict and sandboxed run imports its modules. Install packages with `hermes-wasm-exec packages install`.", verb, shown, d)
		}
	}
	// A run's private dir holds the code it runs (the generated
	// hermes_tools module, the runner, their bytecode): another run's file
	// tools must not rewrite what a live session kernel imports next.
	if d := stagingDirOf(p.px, path, p.tempRoots); d != "" {
		return fmt.Sprintf("%s denied: '%s' is in a run's private staging dir (%s), which holds the code that run executes. "+
			"Write the file somewhere else.", verb, shown, d)
	}
	if p.matches(path, p.sensitiveFiles, p.sensitiveDirs) {
		return "Refusing to write to sensitive system path: " + given + "\n" +
			"Use the terminal tool with sudo if you need to modify system files."
	}
	// A script that rewrote config.yaml could turn approvals off for every
	// later run.
	if p.matches(path, p.configFiles, nil) {
		return "Refusing to write to Hermes config file: " + given + "\n" +
			"Agent cannot modify security-sensitive configuration. " +
			"Edit ~/.hermes/config.yaml directly or use 'hermes config' instead."
	}
	return ""
}

// readBlock returns Hermes's refusal when reading path (resolved, absolute)
// is denied, or "": Hermes's internal caches and credential stores, and
// project env files anywhere. lexicalBase is the file name as given, so a
// link named .env is refused like the file it points to.
func (p safetyPolicy) readBlock(path, lexicalBase string) string {
	if reason := p.readReason(path, lexicalBase); reason != "" {
		return "Access denied: " + path + " " + reason
	}
	return ""
}

// readReason is why readBlock refuses path: the refusal after its
// "Access denied: <path> ", or "".
func (p safetyPolicy) readReason(path, lexicalBase string) string {
	if p.matches(path, nil, p.hubDirs) {
		return "is an internal Hermes cache file and cannot be read directly to prevent prompt injection. " +
			"Use the skills_list or skill_view tools instead."
	}
	if p.matches(path, p.readFiles, nil) {
		return "is a Hermes credential store and cannot be read directly. " +
			"Provider tools consume these credentials through internal channels." + notABoundary
	}
	for _, d := range p.readDirs {
		if p.px.within(path, d.path) {
			if p.px.key(path) == p.px.key(d.path) {
				return d.dirMsg + notABoundary
			}
			return d.fileMsg + notABoundary
		}
	}
	if isProjectEnv(p.px.base(path)) || isProjectEnv(lexicalBase) {
		return "is a secret-bearing environment file and cannot be read to prevent credential leakage. " +
			"If you need to check the file structure, read .env.example instead." + notABoundary
	}
	return ""
}

// credential reports whether path is one of the credential files that
// write_file refuses as "a protected system/credential file".
func (p safetyPolicy) credential(path string) bool {
	return p.matches(path, p.writeFiles, p.writeDirs) || p.anyHome && inAnyHome(path)
}

// isProjectEnv reports whether name is a secret-bearing env file name,
// compared in lower case as Hermes compares: Hermes's list
// (projectEnvNames), and the rest of its family, which the list misses
// (.env.prod, .env.backup, .env.local.bak, prod.env): .env.<anything> and
// <anything>.env, also with an editor's backup "~" after it. A name with a
// template part (envTemplateParts: .env.example, .env.sample,
// .env.template, .env.dist, .env.local.example, example.env) is not one:
// templates hold no secrets and are what the refusal says to read instead.
func isProjectEnv(name string) bool {
	n := strings.TrimSuffix(strings.ToLower(name), "~")
	if slices.Contains(projectEnvNames, n) {
		return true
	}
	if !strings.HasPrefix(n, ".env.") && !(strings.HasSuffix(n, ".env") && n != ".env") {
		return false
	}
	for _, part := range strings.Split(n, ".") {
		if slices.Contains(envTemplateParts, part) {
			return false
		}
	}
	return true
}

// safeRoots parses the HERMES_WRITE_SAFE_ROOT value: each non-empty entry,
// with "~" expanded, made absolute and resolved, sorted and deduplicated.
func safeRoots(value string) []string {
	var roots []string
	for _, r := range filepath.SplitList(value) {
		if r == "" {
			continue
		}
		abs, err := filepath.Abs(expandHome(r))
		if err != nil {
			continue
		}
		roots = append(roots, realOrSelf(abs))
	}
	sort.Strings(roots)
	return slices.Compact(roots)
}

// confined returns the refusal for a path (resolved) outside the session
// working dir when confinement is on, or "". verb is "Read", "Write" or
// "Search".
func (t *Tools) confined(verb, given, path string) string {
	if !t.confine || t.px.within(path, t.workdirReal()) {
		return ""
	}
	return fmt.Sprintf("%s denied: '%s' resolves to %s, outside the session working directory %s, and %s is true. "+
		"Use a path inside the working directory, or set %s: false in config.yaml.",
		verb, given, path, t.workdirReal(), confineKey, confineKey)
}

// checkWrite returns why changing abs (the script's path given, made
// absolute) is refused, or "". verb is "Write", or "Delete" and "Move" for
// those V4A operations, as in Hermes. Symlinks are resolved first; the
// lexical path is checked as well, so neither a link into a protected
// directory nor a protected path reached through a linked parent gets
// through. The "denied" messages name the resolved path, as Hermes's
// write_file and patch do, or with asGiven (V4A, whose paths Hermes checks
// as written in the patch) the path as given.
//
// On a remote backend the rules are evaluated on the target's paths (see
// remotePolicy); HERMES_WRITE_SAFE_ROOT, which names directories of this
// host, does not confine a remote backend's writes.
func (t *Tools) checkWrite(verb, given, abs string, asGiven bool) string {
	real, err := t.realPath(abs)
	if err != nil {
		return fmt.Sprintf("%s denied: '%s' cannot be resolved: %v. "+
			"Fix or remove the symlink loop (or unreadable symlink) on that path, or use a path that does not go through it.",
			verb, given, unwrapPathError(err))
	}
	shown := real
	if asGiven {
		shown = given
	}
	p := t.policy(real, abs)
	if msg := p.writeBlock(verb, shown, given, real); msg != "" {
		return msg
	}
	if msg := p.writeBlock(verb, shown, given, abs); msg != "" {
		return msg
	}
	if roots := safeRoots(t.writeSafeRoot); !t.remote() && len(roots) > 0 &&
		!slices.ContainsFunc(roots, func(r string) bool { return within(real, r) }) {
		return fmt.Sprintf("%s denied: '%s' is outside %s (%s). Unset the variable or add this path's directory prefix.",
			verb, shown, WriteSafeRootEnv, strings.Join(roots, string(os.PathListSeparator)))
	}
	return t.confined(verb, given, real)
}

// checkRead returns why reading abs (the script's path given, made
// absolute) is refused, or "".
func (t *Tools) checkRead(given, abs string) string {
	real := t.realOrSelf(abs)
	if msg := t.confined("Read", given, real); msg != "" {
		return msg
	}
	return t.policy(real, abs).readBlock(real, t.base(abs))
}

// ReadBlock is why a sandboxed script's own read of path (absolute, on
// this host) is refused by the rules read_file applies, or "": Hermes's
// credential stores and caches, secret-bearing env files, and hard links
// to those or to credential files (see linkReadBlock). The sandboxed
// project mode's file system asks it for every open (runtime/internal/strict).
func (t *Tools) ReadBlock(path string) string {
	if msg := t.checkRead(path, path); msg != "" {
		return msg
	}
	if info, err := os.Lstat(path); err == nil && info.Mode().IsRegular() {
		return t.linkReadBlock(path, info, nil)
	}
	return ""
}

// PackageReadBlock is ReadBlock for a file of a package dir the sandboxed
// project mode mounts read-only (the project python's site-packages),
// which lies outside the working dir by design: the same rules, but not
// confine_tools_to_workdir's (the script imports from there).
func (t *Tools) PackageReadBlock(path string) string {
	real := t.realOrSelf(path)
	if msg := t.policy(real, path).readBlock(real, t.base(path)); msg != "" {
		return msg
	}
	if info, err := os.Lstat(path); err == nil && info.Mode().IsRegular() {
		return t.linkReadBlock(path, info, nil)
	}
	return ""
}

// WriteBlock is why a sandboxed script's own creation, change or removal
// of path (absolute, on this host) is refused by the rules write_file
// applies, or "": credential files, the executor's caches and staging
// dirs, sensitive system paths, Hermes's config, HERMES_WRITE_SAFE_ROOT,
// confine_tools_to_workdir, and hard links to credential files.
func (t *Tools) WriteBlock(path string) string {
	if msg := t.checkWrite("Write", path, path, false); msg != "" {
		return msg
	}
	if info, err := os.Lstat(path); err == nil && info.Mode().IsRegular() {
		return t.linkWriteBlock(path, info)
	}
	return ""
}

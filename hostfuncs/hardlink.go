package hostfuncs

// Hard links. A hard link is a file's second name, with no "real" path to
// resolve it to, so the path checks (filesafety.go) see notes.txt where the
// file is the project's .env or ~/.ssh/id_rsa. A regular file with more than
// one link is therefore also judged by its identity (device and inode; on
// Windows volume serial number and file index): the names of protected
// files this run can find are indexed by identity, and a file that has one
// of them as another name is judged as that name is (linkReadBlock,
// linkWriteBlock). A file with one link, nearly every file, costs at most
// one fstat more: the link count comes from the handle read_file and
// search_files open, else from the stat the tools already make (on
// Windows, where a stat carries no link count, write_file and patch open
// the file once more).
//
// The names looked at are found when a file with more than one link is
// first judged, once per Tools (a run):
//   - the fixed locations: what read_file refuses by name in every Hermes
//     home (.env, auth.json, mcp-tokens/, browser-profile/, skills/.hub/,
//     ...) and the credential files and dirs of the user's home (~/.ssh/,
//     ~/.aws/, ~/.netrc, ...), each dir walked up to linkDirBudget
//     entries; on a remote backend the target's home (Backend.Home) and
//     its .hermes. Other protected paths are readable (/etc/passwd, a
//     Hermes transcript) and a write through a link replaces only the name
//     it is given, so links to them are not looked for;
//   - project env files (isProjectEnv) in the working dir's tree, walked
//     breadth-first without entering .git or node_modules, up to
//     linkTreeBudget entries; on this host only (on a remote backend the
//     walk would cost a round trip per dir);
//   - project env files in the judged file's own dir and every dir above
//     it (each dir read once per run).
//
// Hard-linked files are common (pnpm's node_modules are links into its
// store, cp -al backups, nix stores, git's local clones): they are read and
// written as before unless one of their other names is a protected file
// found above. What is not recognised: a link to an env file elsewhere than
// those places (another project's tree, a .git or node_modules dir, past
// the budget), and names that appear after the first look in the run.

import (
	"io"
	"io/fs"
	"os"
	"slices"
	"sync"

	"github.com/hermes-agent/hermes-wasm-exec/internal/backend"
)

const (
	// linkTreeBudget bounds the working dir's walk for env files: entries
	// read, about 0.2 s on a busy machine (a Linux /usr of 150,000 entries
	// took 0.5-0.7 s).
	linkTreeBudget = 50_000
	// linkDirBudget bounds the walk of each protected dir (entries read):
	// ~/.ssh or mcp-tokens/ hold a few files, a browser-profile/ snapshot
	// thousands.
	linkDirBudget = 2_000
)

// linkSkipDirs are dirs the working dir's walk does not enter: they hold
// the bulk of a project's files (and pnpm's hard links), and no env file of
// the user's.
var linkSkipDirs = []string{".git", "node_modules"}

// fileKey is a file's identity without its link count.
type fileKey struct{ dev, ino uint64 }

// linkNames maps file identities to names the file goes by.
type linkNames map[fileKey][]string

func (m linkNames) add(id backend.FileID, name string) {
	k := fileKey{id.Dev, id.Ino}
	if !slices.Contains(m[k], name) {
		m[k] = append(m[k], name)
	}
}

// linkIndex is what a Tools knows of protected files with more than one
// link, by identity, each part found when first needed.
type linkIndex struct {
	mu       sync.Mutex
	fixedKey string               // the policy inputs fixed was found for
	fixed    linkNames            // the fixed locations; nil until found
	tree     linkNames            // env files of the working dir's tree; nil until walked
	dirs     map[string]linkNames // env files directly in a dir, by dir
}

// fileIdentity returns the identity of the regular file at name, whose stat
// is info; f, when not nil, is the file open for reading. A local open
// file is asked first (the file read is the file judged), then info, then
// the file system (on Windows, where a stat carries no identity). ok is
// false when it cannot be told: the file is then judged by its path alone.
func (t *Tools) fileIdentity(name string, info fs.FileInfo, f io.Reader) (backend.FileID, bool) {
	if of, ok := f.(*os.File); ok {
		if id, ok := backend.OpenedID(of); ok {
			return id, true
		}
	}
	if id, ok := backend.IDOf(info); ok {
		return id, true
	}
	id, err := t.fs.FileID(name)
	return id, err == nil
}

// linkReadBlock returns why reading the regular file at abs (info its
// stat, f the file when open, else nil) is refused because another of its
// names is protected, or "": a name read_file refuses (an env file,
// Hermes's stores), or a credential file write_file refuses.
func (t *Tools) linkReadBlock(abs string, info fs.FileInfo, f io.Reader) string {
	id, ok := t.fileIdentity(abs, info, f)
	if !ok || id.Nlink < 2 {
		return ""
	}
	real := t.realOrSelf(abs)
	for _, other := range t.linkedNames(real, id) {
		p := t.policy(other)
		if reason := p.readReason(other, p.px.base(other)); reason != "" {
			return "Access denied: " + real + " is a hard link to " + other + ", which " + reason
		}
		if p.credential(other) {
			return "Access denied: " + real + " is a hard link to " + other + ", which is a protected system/credential file." + notABoundary
		}
	}
	return ""
}

// linkWriteBlock returns why write_file refuses to write the existing
// regular file at target (symlinks followed; info its stat) because
// another of its names is a credential file it refuses, or "". A write
// replaces the name (a temp file renamed over it), so the other name would
// keep its content; the write is refused all the same, as it is under that
// name.
func (t *Tools) linkWriteBlock(target string, info fs.FileInfo) string {
	id, ok := t.fileIdentity(target, info, nil)
	if !ok || id.Nlink < 2 {
		return ""
	}
	for _, other := range t.linkedNames(t.realOrSelf(target), id) {
		if t.policy(other).credential(other) {
			return "Write denied: '" + target + "' is a hard link to '" + other + "', which is a protected system/credential file."
		}
	}
	return ""
}

// linkedNames returns the names of protected files found for identity id
// (see the comment at the top), other than real, the judged file's
// resolved path.
func (t *Tools) linkedNames(real string, id backend.FileID) []string {
	x := &t.links
	x.mu.Lock()
	defer x.mu.Unlock()
	key := "remote"
	if !t.remote() {
		_, _, key = t.policyInputs()
	}
	if x.fixed == nil || x.fixedKey != key {
		x.fixed, x.fixedKey = t.findFixedLinks(), key
	}
	if x.tree == nil {
		x.tree = linkNames{}
		if !t.remote() {
			budget := linkTreeBudget
			t.walkLinks(t.workdirReal(), &budget, linkSkipDirs, isProjectEnv, x.tree)
		}
	}
	k := fileKey{id.Dev, id.Ino}
	var names []string
	add := func(found []string) {
		for _, n := range found {
			if t.px.key(n) != t.px.key(real) && !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	add(x.fixed[k])
	add(x.tree[k])
	for d := t.dir(real); ; {
		add(x.envIn(t, d)[k])
		parent := t.dir(d)
		if parent == d {
			break
		}
		d = parent
	}
	return names
}

// envIn returns the env files with more than one link directly in dir,
// read once per run.
func (x *linkIndex) envIn(t *Tools, dir string) linkNames {
	if m, ok := x.dirs[dir]; ok {
		return m
	}
	m := linkNames{}
	if entries, err := t.fs.ReadDir(dir); err == nil {
		for _, e := range entries {
			if e.Type().IsRegular() && isProjectEnv(e.Name()) {
				child := t.join(dir, e.Name())
				if id, ok := t.entryID(child, e); ok && id.Nlink > 1 {
					m.add(id, child)
				}
			}
		}
	}
	if x.dirs == nil {
		x.dirs = map[string]linkNames{}
	}
	x.dirs[dir] = m
	return m
}

// findFixedLinks finds the files with more than one link among the fixed
// locations (see the comment at the top): the Hermes homes' files and dirs
// read_file refuses, and the credential files and dirs of the user's home,
// as written and resolved.
func (t *Tools) findFixedLinks() linkNames {
	var (
		p           safetyPolicy
		home        string
		files, dirs []string
		resolve     = func(s string) string { return s }
	)
	if t.remote() {
		home = t.remoteHome()
		p = t.remotePolicy()
		if home != "" {
			p = t.remotePolicy(t.join(home, ".hermes"))
		}
	} else {
		home, _, _ = t.policyInputs()
		p, _ = t.basePolicy()
		resolve = realOrSelf
	}
	if home != "" {
		for _, f := range protectedHomeFiles {
			f = t.join(home, t.px.fromSlash(f))
			files = append(files, f, resolve(f))
		}
		for _, d := range protectedHomeDirs {
			d = t.join(home, t.px.fromSlash(d))
			dirs = append(dirs, d, resolve(d))
		}
	}
	files = append(files, p.readFiles...)
	for _, d := range p.readDirs {
		dirs = append(dirs, d.path)
	}
	dirs = append(dirs, p.hubDirs...)
	m := linkNames{}
	seen := map[string]bool{}
	for _, f := range files {
		if seen[f] {
			continue
		}
		seen[f] = true
		if id, err := t.fs.FileID(f); err == nil && id.Nlink > 1 {
			m.add(id, f)
		}
	}
	all := func(string) bool { return true }
	for _, d := range dirs {
		if !seen[d] {
			seen[d] = true
			budget := linkDirBudget
			t.walkLinks(d, &budget, nil, all, m)
		}
	}
	return m
}

// walkLinks walks dir breadth-first, reading at most *budget entries
// (counted down), following no symlink or junction and entering no dir
// named in skip, and adds to m the regular files whose names match and
// that have more than one link.
func (t *Tools) walkLinks(dir string, budget *int, skip []string, match func(name string) bool, m linkNames) {
	skipped := func(name string) bool {
		return slices.ContainsFunc(skip, func(s string) bool { return t.px.key(s) == t.px.key(name) })
	}
	queue := []string{dir}
	for len(queue) > 0 && *budget > 0 {
		d := queue[0]
		queue = queue[1:]
		entries, err := t.fs.ReadDir(d)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if *budget <= 0 {
				return
			}
			*budget--
			child := t.join(d, e.Name())
			switch {
			case e.Type()&fs.ModeSymlink != 0 || e.IsDir() && e.Type()&fs.ModeIrregular != 0:
			case e.IsDir():
				if !skipped(e.Name()) {
					queue = append(queue, child)
				}
			case e.Type().IsRegular() && match(e.Name()):
				if id, ok := t.entryID(child, e); ok && id.Nlink > 1 {
					m.add(id, child)
				}
			}
		}
	}
}

// entryID returns the identity of the directory entry e, at path: what its
// info carries (an lstat here, the agent's answer remotely), else what the
// file system tells (Windows).
func (t *Tools) entryID(path string, e fs.DirEntry) (backend.FileID, bool) {
	if info, err := e.Info(); err == nil {
		if id, ok := backend.IDOf(info); ok {
			return id, true
		}
	}
	id, err := t.fs.FileID(path)
	return id, err == nil
}

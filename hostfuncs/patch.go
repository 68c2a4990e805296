package hostfuncs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"
)

// patchArgs are patch's keyword arguments; nil pointers are absent or null.
type patchArgs struct {
	Path       *string `json:"path"`
	OldString  *string `json:"old_string"`
	NewString  *string `json:"new_string"`
	ReplaceAll *bool   `json:"replace_all"`
	Mode       *string `json:"mode"`
	Patch      *string `json:"patch"`
}

// patchNewFilePerm is the mode of files created by "*** Add File".
const patchNewFilePerm fs.FileMode = 0o644

// patchBinarySniff is how many leading bytes are checked for NUL.
const patchBinarySniff = 8192

// Bounds on what one patch call may cost the host. patch holds a file, its
// new content and a diff in memory at once, and replace_all multiplies
// (4 MB of "a" replaced by 150 bytes each is 600 MB), so the limits are
// checked before anything is built. 32 MiB is half the 64 MiB a tool
// request may carry: write_file can still replace any file patch refuses.
const (
	// patchMaxBytes bounds the files patch reads and the content it writes.
	patchMaxBytes = 32 << 20
	// patchMaxMatches bounds the replacements of one replace_all.
	patchMaxMatches = 100_000
	// patchMaxLines bounds the lines of a V4A patch text and of a file a
	// V4A update splits into lines.
	patchMaxLines = 1 << 20
)

// patchMiB formats a byte count in MiB for limit messages.
func patchMiB(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// patchResultTooBig is the refusal for a V4A result over patchMaxBytes.
func patchResultTooBig(path string, size int) string {
	return fmt.Sprintf("Cannot write %s: the patch would make it %s, over the %d MiB patch writes. "+
		"Use write_file with the full new content, or terminal. No files were modified.",
		path, patchMiB(int64(size)), patchMaxBytes>>20)
}

// patchTooBig is the refusal for a file over patchMaxBytes.
func patchTooBig(path string, size int64) string {
	return fmt.Sprintf("Cannot patch %s: it is %s, over the %d MiB patch reads and writes. "+
		"Use write_file with the full new content, or terminal (e.g. sed) to edit a file this large.",
		path, patchMiB(size), patchMaxBytes>>20)
}

func patchFail(msg string) result {
	return result{"success": false, "error": msg}
}

// patch edits files: mode "replace" swaps old_string for new_string in one
// file (tolerating whitespace and line-ending drift), mode "patch" applies
// a V4A multi-file patch all-or-nothing.
func (t *Tools) patch(ctx context.Context, args json.RawMessage) result {
	var a patchArgs
	if r := decodeArgs("patch", args, &a); r != nil {
		r["success"] = false
		return r
	}
	mode := "replace"
	if a.Mode != nil && strings.TrimSpace(*a.Mode) != "" {
		mode = strings.ToLower(strings.TrimSpace(*a.Mode))
	}
	switch mode {
	case "replace":
		return t.patchReplace(ctx, a)
	case "patch":
		if a.Patch == nil || strings.TrimSpace(*a.Patch) == "" {
			return patchFail(`patch is required for mode="patch": pass the V4A patch text ("*** Begin Patch" ... "*** End Patch")`)
		}
		return t.patchApplyV4A(ctx, *a.Patch)
	default:
		return patchFail(fmt.Sprintf(`Invalid mode %q: valid modes are "replace" (path, old_string, new_string) and "patch" (V4A patch text)`, *a.Mode))
	}
}

// patchReplace implements mode "replace".
func (t *Tools) patchReplace(ctx context.Context, a patchArgs) result {
	if a.Path == nil || strings.TrimSpace(*a.Path) == "" {
		msg := `path is required for mode="replace"`
		if a.Patch != nil {
			msg += `; to apply a V4A patch pass mode="patch"`
		}
		return patchFail(msg)
	}
	if a.OldString == nil || *a.OldString == "" {
		return patchFail("old_string cannot be empty")
	}
	if a.NewString == nil {
		return patchFail(`new_string is required for mode="replace" (use "" to delete old_string)`)
	}
	oldS, newS := *a.OldString, *a.NewString
	if oldS == newS {
		return patchFail("old_string and new_string are identical")
	}
	path := *a.Path
	abs := t.resolve(path)
	if msg := t.checkWrite("Write", path, abs, false); msg != "" {
		return patchFail(msg)
	}
	// The diff (and a "closest line" hint) shows the file's content, so
	// patch may only edit what read_file may read.
	if msg := t.checkRead(path, abs); msg != "" {
		return patchFail(msg)
	}

	info, err := t.fs.Stat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return patchFail("File not found: " + path)
	case err != nil:
		return patchFail(fmt.Sprintf("Cannot access %s: %v", path, err))
	case info.IsDir():
		return patchFail("Path is a directory, not a file: " + path)
	case !info.Mode().IsRegular():
		return patchFail("Not a regular file: " + path)
	case info.Size() > patchMaxBytes:
		return patchFail(patchTooBig(path, info.Size()))
	}
	if msg := t.linkReadBlock(abs, info, nil); msg != "" {
		return patchFail(msg)
	}
	data, err := t.fs.ReadFile(abs)
	if err != nil {
		return patchFail(fmt.Sprintf("Failed to read %s: %v", path, err))
	}
	if patchIsBinary(data) {
		return patchFail("Cannot patch binary file: " + path)
	}
	content := string(data)

	replaceAll := a.ReplaceAll != nil && *a.ReplaceAll
	keep := 1
	if replaceAll {
		keep = patchMaxMatches
	}
	found := patchFindMatches(content, oldS, newS, keep)
	spans := found.spans
	switch {
	case found.count == 0:
		msg := "Could not find a match for old_string in the file"
		if n, line, ok := patchClosestLine(content, oldS); ok {
			msg += fmt.Sprintf(". Closest line (%d): %q", n, v4aClip(line))
		}
		return patchFail(msg)
	case found.count > 1 && !replaceAll:
		return patchFail(fmt.Sprintf("Found %d matches for old_string. Provide more context to make it unique, or use replace_all=True.", found.count))
	case found.count > patchMaxMatches:
		return patchFail(fmt.Sprintf("Found %d matches for old_string, more than the %d patch replaces in one call. "+
			"Use terminal (e.g. sed) for a bulk edit this large, or write_file with the full new content.", found.count, patchMaxMatches))
	case found.atLeast || found.size > patchMaxBytes:
		size := patchMiB(int64(found.size))
		if found.atLeast {
			size = "at least " + size
		}
		return patchFail(fmt.Sprintf("Patch refused: replacing %d match(es) would make %s %s, over the %d MiB patch writes. "+
			"Nothing was changed. Use write_file with the full new content, or terminal (e.g. sed) for an edit this large.",
			found.count, path, size, patchMaxBytes>>20))
	}

	var b strings.Builder
	b.Grow(found.size + 2)
	prev := 0
	for _, s := range spans {
		b.WriteString(content[prev:s.start])
		b.WriteString(s.repl)
		prev = s.end
	}
	b.WriteString(content[prev:])
	updated := b.String()
	restoredNL := strings.HasSuffix(content, "\n") && updated != "" && !strings.HasSuffix(updated, "\n")
	if restoredNL {
		updated += patchToEOL("\n", patchUsesCRLF(content))
	}

	if updated != content {
		if err := ctx.Err(); err != nil {
			return patchFail(fmt.Sprintf("Patch cancelled: %v", err))
		}
		target := abs
		if r, err := t.realPath(abs); err == nil {
			target = r
		}
		if err := t.patchAtomicWrite(target, []byte(updated), info.Mode()); err != nil {
			return patchFail(fmt.Sprintf("Failed to write %s: %v", path, err))
		}
	}
	rel := t.patchDisplayPath(abs)
	var diff patchDiffWriter
	diff.file(content, updated, "a/"+rel, "b/"+rel, false, func() []patchRegion { return patchSpanRegions(content, updated, spans, restoredNL) })
	return diff.result(result{
		"success":        true,
		"files_modified": []string{abs},
	})
}

// patchIsBinary reports whether data looks binary (a NUL byte early on).
func patchIsBinary(data []byte) bool {
	return bytes.IndexByte(data[:min(len(data), patchBinarySniff)], 0) >= 0
}

// patchDisplayPath is abs relative to the working dir, with slashes, for
// diff headers.
func (t *Tools) patchDisplayPath(abs string) string {
	rel, err := t.px.rel(t.workdir, abs)
	if err != nil {
		rel = abs
	}
	return t.px.toSlash(rel)
}

// patchStage writes data to a temp file beside path, with perm, ready to be
// renamed over it. It returns the temp file's name.
func (t *Tools) patchStage(path string, data []byte, perm fs.FileMode) (string, error) {
	return t.fs.WriteTemp(t.dir(path), "."+t.base(path)+".patch-*", data,
		perm&(fs.ModePerm|fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky))
}

// patchAtomicWrite replaces path with data through a temp file and rename.
func (t *Tools) patchAtomicWrite(path string, data []byte, perm fs.FileMode) error {
	tmp, err := t.patchStage(path, data, perm)
	if err != nil {
		return err
	}
	if err := t.fs.Rename(tmp, path); err != nil {
		t.fs.Remove(tmp)
		return err
	}
	return nil
}

// patchVFile is one file in the in-memory view a V4A patch is applied to.
type patchVFile struct {
	given   string // path as written in the patch
	abs     string // lexical absolute path
	real    string // abs with symlinks resolved, for writing
	display string // slash path relative to the working dir
	orig    *string
	cur     *string
	perm    fs.FileMode
	// movedFrom is the source of a "*** Move to" that created this file.
	movedFrom *patchVFile
	// edits counts the sections that changed the file; regions bound the
	// changes of a single Update (nil otherwise), for the diff.
	edits   int
	regions []patchRegion
}

// patchApplyV4A implements mode "patch".
func (t *Tools) patchApplyV4A(ctx context.Context, text string) result {
	if n := strings.Count(text, "\n") + 1; n > patchMaxLines {
		return patchFail(fmt.Sprintf("The patch has %d lines, more than the %d one patch call takes. "+
			"Split it into several patches, or use write_file for whole files.", n, patchMaxLines))
	}
	ops, err := v4aParse(text)
	if err != nil {
		return patchFail(err.Error())
	}

	files := map[string]*patchVFile{}
	var order []*patchVFile
	// get loads the file at p; verb says what the patch does to it, for
	// the file-safety refusal. read says the patch shows the file's
	// current content (an update's diff and hints, a deletion's diff), so
	// read_file's refusals apply too.
	get := func(p, verb string, read bool) (*patchVFile, string) {
		abs, real, msg := t.patchV4APath(p, verb)
		if msg != "" {
			return nil, msg
		}
		if read {
			if msg := t.checkRead(p, abs); msg != "" {
				return nil, msg
			}
		}
		if f, ok := files[abs]; ok {
			return f, ""
		}
		f := &patchVFile{given: p, abs: abs, real: real, display: t.patchDisplayPath(abs), perm: patchNewFilePerm}
		info, err := t.fs.Stat(abs)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return nil, fmt.Sprintf("Cannot access %s: %v", p, err)
		case info.IsDir():
			return nil, "Path is a directory, not a file: " + p
		case !info.Mode().IsRegular():
			return nil, "Not a regular file: " + p
		case info.Size() > patchMaxBytes:
			return nil, patchTooBig(p, info.Size())
		default:
			if read {
				if msg := t.linkReadBlock(abs, info, nil); msg != "" {
					return nil, msg
				}
			}
			data, err := t.fs.ReadFile(abs)
			if err != nil {
				return nil, fmt.Sprintf("Failed to read %s: %v", p, err)
			}
			if patchIsBinary(data) {
				return nil, "Cannot patch binary file: " + p
			}
			s := string(data)
			f.orig, f.cur, f.perm = &s, &s, info.Mode()
		}
		files[abs] = f
		order = append(order, f)
		return f, ""
	}

	for _, op := range ops {
		verb := "Write"
		switch {
		case op.Kind == v4aOpDelete:
			verb = "Delete"
		case op.Kind == v4aOpUpdate && op.MoveTo != "":
			verb = "Move"
		}
		f, msg := get(op.Path, verb, op.Kind != v4aOpAdd)
		if msg != "" {
			return patchFail(msg)
		}
		switch op.Kind {
		case v4aOpAdd:
			if f.cur != nil {
				return patchFail(fmt.Sprintf("Cannot add %s: file already exists (use *** Update File to change it). No files were modified.", op.Path))
			}
			if len(op.Content) > patchMaxBytes {
				return patchFail(patchResultTooBig(op.Path, len(op.Content)))
			}
			c := op.Content
			f.cur = &c
			f.edits++
		case v4aOpDelete:
			if f.cur == nil {
				return patchFail(fmt.Sprintf("File not found: %s (in *** Delete File). No files were modified.", op.Path))
			}
			f.cur = nil
			f.edits++
		case v4aOpUpdate:
			if f.cur == nil {
				return patchFail(fmt.Sprintf("File not found: %s (in *** Update File). No files were modified.", op.Path))
			}
			updated := *f.cur
			var regions []patchRegion
			if n := strings.Count(updated, "\n") + 1; len(op.Hunks) > 0 && n > patchMaxLines {
				return patchFail(fmt.Sprintf("Cannot update %s: it has %d lines, more than the %d a V4A patch edits. "+
					"Use mode=\"replace\", write_file with the full new content, or terminal (e.g. sed). No files were modified.",
					op.Path, n, patchMaxLines))
			}
			if len(op.Hunks) > 0 {
				updated, regions, err = v4aApplyHunks(*f.cur, op.Hunks, op.Path)
				if err != nil {
					return patchFail(err.Error())
				}
				if len(updated) > patchMaxBytes {
					return patchFail(patchResultTooBig(op.Path, len(updated)))
				}
			}
			f.edits++
			if f.edits == 1 {
				f.regions = regions
			} else {
				f.regions = nil
			}
			dst := f
			if op.MoveTo != "" {
				if dst, msg = get(op.MoveTo, "Move", false); msg != "" {
					return patchFail(msg)
				}
			}
			if dst != f {
				if dst.cur != nil {
					return patchFail(fmt.Sprintf("Cannot move %s to %s: the destination already exists. No files were modified.", op.Path, op.MoveTo))
				}
				dst.perm, dst.movedFrom = f.perm, f
				dst.edits, dst.regions = f.edits, f.regions
				f.cur = nil
			}
			dst.cur = &updated
		}
	}

	if err := ctx.Err(); err != nil {
		return patchFail(fmt.Sprintf("Patch cancelled: %v. No files were modified.", err))
	}
	return t.patchCommit(order)
}

// patchV4APath resolves a patch path, refusing any that leaves the working
// dir lexically or through a symlink, and any that file safety protects
// (verb is what the patch does there: "Write", "Delete" or "Move"). It
// returns the absolute path, the symlink-resolved path to write, or an
// error message.
func (t *Tools) patchV4APath(p, verb string) (abs, real, msg string) {
	escape := "Path escapes the working directory: " + p
	native := t.px.fromSlash(p)
	if strings.HasPrefix(p, "/") || strings.HasPrefix(p, `\`) || !t.px.isLocal(native) {
		return "", "", escape
	}
	abs = t.join(t.workdir, native)
	root := t.workdirReal()
	real, err := t.realPath(abs)
	if err != nil {
		return "", "", fmt.Sprintf("Cannot resolve %s: %v. Fix or remove the symlink loop (or unreadable symlink) on that path, "+
			"or use a path that does not go through it.", p, err)
	}
	if rel, err := t.px.rel(root, real); err != nil || !t.px.isLocal(rel) {
		return "", "", escape
	}
	// Every path a patch touches (added, updated, deleted, or either end
	// of a move) passes the same checks as write_file.
	if msg := t.checkWrite(verb, p, abs, true); msg != "" {
		return "", "", msg
	}
	return abs, real, ""
}

// patchCommit writes the V4A result: every new content is staged in a temp
// file first (nothing changes if any staging fails), then renamed into
// place, then deletions run.
func (t *Tools) patchCommit(order []*patchVFile) result {
	type staged struct {
		f   *patchVFile
		tmp string
	}
	var (
		stagedFiles []staged
		createdDirs []string
		deletes     []*patchVFile
		changed     []*patchVFile
	)
	abort := func(msg string) result {
		for _, s := range stagedFiles {
			t.fs.Remove(s.tmp)
		}
		for i := len(createdDirs) - 1; i >= 0; i-- {
			t.fs.Remove(createdDirs[i])
		}
		return patchFail(msg + ". No files were modified.")
	}
	for _, f := range order {
		switch {
		case f.orig == nil && f.cur == nil:
			continue
		case f.cur == nil:
			deletes = append(deletes, f)
		case f.orig != nil && *f.orig == *f.cur:
			continue
		default:
			dirs, err := t.patchMkdirs(t.dir(f.real))
			createdDirs = append(createdDirs, dirs...)
			if err != nil {
				return abort(fmt.Sprintf("Failed to create the directory for %s: %v", f.given, err))
			}
			tmp, err := t.patchStage(f.real, []byte(*f.cur), f.perm)
			if err != nil {
				return abort(fmt.Sprintf("Failed to write %s: %v", f.given, err))
			}
			stagedFiles = append(stagedFiles, staged{f, tmp})
		}
		changed = append(changed, f)
	}

	var failures []string
	for i, s := range stagedFiles {
		if err := t.fs.Rename(s.tmp, s.f.real); err != nil {
			failures = append(failures, fmt.Sprintf("%s: %v", s.f.given, err))
			t.fs.Remove(s.tmp)
			if i == 0 {
				// Nothing is in place yet: undo cleanly.
				for _, rest := range stagedFiles[1:] {
					t.fs.Remove(rest.tmp)
				}
				for j := len(createdDirs) - 1; j >= 0; j-- {
					t.fs.Remove(createdDirs[j])
				}
				return patchFail(fmt.Sprintf("Failed to write %s: %v. No files were modified.", s.f.given, err))
			}
		}
	}
	for _, f := range deletes {
		if err := t.fs.Remove(f.abs); err != nil {
			failures = append(failures, fmt.Sprintf("%s: %v", f.given, err))
		}
	}
	if len(failures) > 0 {
		return patchFail("Patch partially applied; these files could not be written: " + strings.Join(failures, "; "))
	}

	var diff patchDiffWriter
	modified, added, deleted := []string{}, []string{}, []string{}
	done := map[*patchVFile]bool{}
	for _, f := range changed {
		modified = append(modified, f.abs)
		switch {
		case f.orig == nil:
			added = append(added, f.abs)
		case f.cur == nil:
			deleted = append(deleted, f.abs)
		}
	}
	// A moved file shows as one diff from its old path to its new one, at
	// the position of the source.
	moveDst := map[*patchVFile]*patchVFile{}
	for _, f := range changed {
		if src := f.movedFrom; f.orig == nil && f.cur != nil && src != nil && src.orig != nil && src.cur == nil {
			moveDst[src] = f
		}
	}
	for _, f := range changed {
		if done[f] {
			continue
		}
		done[f] = true
		if dst, ok := moveDst[f]; ok && !done[dst] {
			done[dst] = true
			diff.file(*f.orig, *dst.cur, "a/"+f.display, "b/"+dst.display, true, func() []patchRegion { return dst.regions })
			continue
		}
		from, to := "a/"+f.display, "b/"+f.display
		var oldText, newText string
		if f.orig == nil {
			from = "/dev/null"
		} else {
			oldText = *f.orig
		}
		if f.cur == nil {
			to = "/dev/null"
		} else {
			newText = *f.cur
		}
		var regions []patchRegion
		if f.edits == 1 {
			regions = f.regions
		}
		// Headers even when the texts are equal: adding or deleting an
		// empty file.
		diff.file(oldText, newText, from, to, true, func() []patchRegion { return regions })
	}
	sort.Strings(modified)
	sort.Strings(added)
	sort.Strings(deleted)
	return diff.result(result{
		"success":        true,
		"files_modified": modified,
		"files_added":    added,
		"files_deleted":  deleted,
	})
}

// patchMkdirs creates dir and its missing parents, returning the ones it
// created, outermost first. Each is created on its own (MkdirAll of a dir
// whose parent exists), so that an abort can remove exactly those.
func (t *Tools) patchMkdirs(dir string) ([]string, error) {
	var missing []string
	for p := dir; ; {
		if _, err := t.fs.Stat(p); err == nil {
			break
		}
		missing = append([]string{p}, missing...)
		parent := t.dir(p)
		if parent == p {
			break
		}
		p = parent
	}
	var created []string
	for _, d := range missing {
		if err := t.fs.MkdirAll(d, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return created, err
		}
		created = append(created, d)
	}
	return created, nil
}

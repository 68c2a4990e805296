package hostfuncs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"

	"github.com/hermes-agent/hermes-wasm-exec/internal/backend"
)

// newFileMode is the permission of files write_file creates.
const newFileMode fs.FileMode = 0o644

// maxSymlinkHops bounds how many symlinks write_file follows to its target.
const maxSymlinkHops = 40

type writeFileArgs struct {
	Path    string  `json:"path"`
	Content *string `json:"content"`
}

// writeFile implements write_file: it replaces the whole file atomically (a
// temp file in the same directory renamed over the target), creating parent
// directories as needed. An existing file keeps its permission bits and a
// symlink keeps pointing at its target, which is what gets written.
// Protected credential and system files are refused (see checkWrite).
func (t *Tools) writeFile(ctx context.Context, raw json.RawMessage) result {
	var a writeFileArgs
	if r := decodeArgs("write_file", raw, &a); r != nil {
		return r
	}
	if a.Path == "" {
		return result{"error": "Invalid arguments for write_file: path is required"}
	}
	if a.Content == nil {
		return result{"error": "Invalid arguments for write_file: content is required"}
	}
	if err := ctx.Err(); err != nil {
		return result{"error": fmt.Sprintf("Failed to write '%s': %v", a.Path, err)}
	}
	abs := t.resolve(a.Path)
	if msg := t.checkWrite("Write", a.Path, abs, false); msg != "" {
		return result{"error": msg}
	}
	target, err := t.followSymlinks(abs)
	if err != nil {
		return result{"error": fmt.Sprintf("Failed to write '%s': %v", a.Path, err)}
	}

	mode := newFileMode
	info, err := t.fs.Stat(target)
	switch {
	case err == nil && info.IsDir():
		return result{"error": fmt.Sprintf("Failed to write '%s': it is a directory", a.Path)}
	case err == nil && !info.Mode().IsRegular():
		return result{"error": fmt.Sprintf("Failed to write '%s': it is %s, not a regular file", a.Path, fileKind(info.Mode()))}
	case err == nil:
		if msg := t.linkWriteBlock(target, info); msg != "" {
			return result{"error": msg}
		}
		mode = info.Mode().Perm()
	case !errors.Is(err, fs.ErrNotExist):
		return result{"error": fmt.Sprintf("Failed to write '%s': %v", a.Path, unwrapPathError(err))}
	}

	dir := t.dir(target)
	dirsCreated := false
	if _, err := t.fs.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		if err := t.fs.MkdirAll(dir, 0o755); err != nil {
			return result{"error": fmt.Sprintf("Failed to create directory for '%s': %v", a.Path, unwrapPathError(err))}
		}
		dirsCreated = true
	}

	if err := atomicWriteIn(t.fs, t.px, target, []byte(*a.Content), mode); err != nil {
		return result{"error": fmt.Sprintf("Failed to write '%s': %v", a.Path, err)}
	}
	return result{
		"bytes_written":  len(*a.Content),
		"dirs_created":   dirsCreated,
		"resolved_path":  target,
		"files_modified": []string{target},
	}
}

// atomicWrite is atomicWriteIn on this host.
func atomicWrite(path string, data []byte, mode fs.FileMode) error {
	return atomicWriteIn(backend.LocalFS, pathSyntax{}, path, data, mode)
}

// atomicWriteIn writes data to a temp file next to path (in fsys, whose
// paths have syntax px), with mode, synced, and renames it over path. On
// any failure the temp file is removed and path is left as it was.
func atomicWriteIn(fsys backend.FS, px pathSyntax, path string, data []byte, mode fs.FileMode) error {
	tmp, err := fsys.WriteTemp(px.dir(path), ".hermes-tmp-*", data, mode)
	if err != nil {
		return unwrapPathError(err)
	}
	if err := fsys.Rename(tmp, path); err != nil {
		fsys.Remove(tmp)
		return err
	}
	return nil
}

// followSymlinks resolves p through any chain of symlinks (also dangling
// ones) so that a write replaces the link's target, not the link.
func (t *Tools) followSymlinks(p string) (string, error) {
	for i := 0; i < maxSymlinkHops; i++ {
		fi, err := t.fs.Lstat(p)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			return p, nil
		}
		dest, err := t.fs.Readlink(p)
		if err != nil {
			return "", unwrapPathError(err)
		}
		if !t.isAbs(dest) {
			dest = t.join(t.dir(p), dest)
		}
		p = t.clean(dest)
	}
	return "", errors.New("too many levels of symbolic links")
}

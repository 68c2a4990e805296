package hostfuncs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
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
	target, err := followSymlinks(abs)
	if err != nil {
		return result{"error": fmt.Sprintf("Failed to write '%s': %v", a.Path, err)}
	}

	mode := newFileMode
	info, err := os.Stat(target)
	switch {
	case err == nil && info.IsDir():
		return result{"error": fmt.Sprintf("Failed to write '%s': it is a directory", a.Path)}
	case err == nil && !info.Mode().IsRegular():
		return result{"error": fmt.Sprintf("Failed to write '%s': it is %s, not a regular file", a.Path, fileKind(info.Mode()))}
	case err == nil:
		mode = info.Mode().Perm()
	case !errors.Is(err, fs.ErrNotExist):
		return result{"error": fmt.Sprintf("Failed to write '%s': %v", a.Path, unwrapPathError(err))}
	}

	dir := filepath.Dir(target)
	dirsCreated := false
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return result{"error": fmt.Sprintf("Failed to create directory for '%s': %v", a.Path, unwrapPathError(err))}
		}
		dirsCreated = true
	}

	if err := atomicWrite(target, []byte(*a.Content), mode); err != nil {
		return result{"error": fmt.Sprintf("Failed to write '%s': %v", a.Path, err)}
	}
	return result{
		"bytes_written":  len(*a.Content),
		"dirs_created":   dirsCreated,
		"resolved_path":  target,
		"files_modified": []string{target},
	}
}

// atomicWrite writes data to a temp file next to path, syncs it, gives it
// mode and renames it over path. On any failure the temp file is removed
// and path is left as it was.
func atomicWrite(path string, data []byte, mode fs.FileMode) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".hermes-tmp-*")
	if err != nil {
		return unwrapPathError(err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.Write(data); err != nil {
		return unwrapPathError(err)
	}
	if err = tmp.Sync(); err != nil {
		return unwrapPathError(err)
	}
	if err = tmp.Chmod(mode); err != nil {
		return unwrapPathError(err)
	}
	if err = tmp.Close(); err != nil {
		return unwrapPathError(err)
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	return nil
}

// followSymlinks resolves p through any chain of symlinks (also dangling
// ones) so that a write replaces the link's target, not the link.
func followSymlinks(p string) (string, error) {
	for i := 0; i < maxSymlinkHops; i++ {
		fi, err := os.Lstat(p)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			return p, nil
		}
		dest, err := os.Readlink(p)
		if err != nil {
			return "", unwrapPathError(err)
		}
		if !filepath.IsAbs(dest) {
			dest = filepath.Join(filepath.Dir(p), dest)
		}
		p = filepath.Clean(dest)
	}
	return "", errors.New("too many levels of symbolic links")
}

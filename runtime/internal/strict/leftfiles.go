package strict

import (
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hermes-agent/hermes-wasm-exec/internal/engine"
)

// fileStamp is what tells a file changed: its size and modification time.
type fileStamp struct {
	size  int64
	mtime time.Time
}

// leftScan finds the files a script created or changed in its staging
// dir, which is discarded (engine.LeftFiles): the regular files whose
// stamp differs from the one known (the files the engine staged, and, in a
// kernel, those an earlier call already reported). It is safe for
// concurrent use.
type leftScan struct {
	dir string
	// changed is set by the jail over dir when a file may have been
	// created or changed (see jailFS.changed): without it, scan has
	// nothing to look for.
	changed atomic.Bool

	mu    sync.Mutex
	known map[string]fileStamp // by path relative to dir, with slashes
}

// newLeftScan returns a scan of dir that knows the staged files (paths
// relative to dir, with slashes), as they are now.
func newLeftScan(dir string, staged []string) *leftScan {
	l := &leftScan{dir: dir, known: make(map[string]fileStamp, len(staged))}
	for _, rel := range staged {
		if fi, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(rel))); err == nil {
			l.known[rel] = fileStamp{fi.Size(), fi.ModTime()}
		}
	}
	return l
}

// scan returns the files created or changed since the last scan (since
// the staging, at first), nil when there are none; with remember, they
// are known from then on (a kernel's next call reports only its own).
// Only regular files are listed; nothing is followed (the guest cannot
// make a symlink, and a directory's files are listed by their paths).
func (l *leftScan) scan(remember bool) *engine.LeftFiles {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.changed.Swap(false) {
		return nil // nothing written since the last scan
	}
	root, err := os.OpenRoot(l.dir)
	if err != nil {
		return nil
	}
	defer root.Close()
	var left engine.LeftFiles
	// WalkDir visits a directory's entries in lexical order.
	_ = fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil // what cannot be read is skipped, not the rest
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		st := fileStamp{fi.Size(), fi.ModTime()}
		if old, ok := l.known[p]; ok && old.size == st.size && old.mtime.Equal(st.mtime) {
			return nil
		}
		if remember {
			l.known[p] = st
		}
		if len(left.Files) < engine.MaxLeftFiles {
			left.Files = append(left.Files, engine.DiscardedFile{Path: p, Size: st.size})
		} else {
			left.More++
		}
		return nil
	})
	if len(left.Files) == 0 {
		return nil
	}
	return &left
}

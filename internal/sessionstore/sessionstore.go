// Package sessionstore keeps the images of suspended session kernels
// (code_execution.session_store): a dir on a local or shared file system,
// one subdir per session, one file per kernel. Writes are atomic (a
// temporary file renamed over the old one), so a reader sees a whole image
// or the previous one, never part of one.
package sessionstore

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// Dir is a store in a dir. It is safe for concurrent use by several
// goroutines and processes.
type Dir struct {
	root string
}

// Open opens (making it, 0700) the store at root.
func Open(root string) (*Dir, error) {
	if !filepath.IsAbs(root) {
		return nil, fmt.Errorf("session store %q: not an absolute path", root)
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, fmt.Errorf("session store: %w", err)
	}
	return &Dir{root: root}, nil
}

// name is a file-name-safe, fixed-length name for s.
func name(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:16])
}

func (d *Dir) sessionDir(session string) string { return filepath.Join(d.root, name(session)) }

func (d *Dir) path(session, kernel string) string {
	return filepath.Join(d.sessionDir(session), name(kernel)+".img")
}

// Put stores data as the image of session's kernel named kernel, over any
// earlier one.
func (d *Dir) Put(session, kernel string, data []byte) error {
	if err := writeFile(d.path(session, kernel), data); err != nil {
		return fmt.Errorf("session store: writing an image: %w", err)
	}
	return nil
}

// Take returns the image of session's kernel named kernel and removes it
// from the store: a kernel resumes from its image once. It returns
// ErrNotFound when there is none.
func (d *Dir) Take(session, kernel string) ([]byte, error) {
	path := d.path(session, kernel)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("session store: %w", err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("session store: %w", err)
	}
	return data, nil
}

// PutBase stores data as the interpreter snapshot whose sum is sum, which
// images are differences from, unless the store has it already. A
// snapshot is made once per process and differs from one making to the
// next, so a store that outlives a process keeps the ones its images need.
func (d *Dir) PutBase(sum string, data []byte) error {
	path := d.basePath(sum)
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	if err := writeFile(path, data); err != nil {
		return fmt.Errorf("session store: writing a snapshot: %w", err)
	}
	return nil
}

// Base returns the snapshot PutBase stored for sum.
func (d *Dir) Base(sum string) ([]byte, error) {
	data, err := os.ReadFile(d.basePath(sum))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNotFound
	}
	return data, err
}

func (d *Dir) basePath(sum string) string {
	return filepath.Join(d.root, "snapshots", name(sum)+".snap")
}

// Delete removes every image of session.
func (d *Dir) Delete(session string) error {
	if err := os.RemoveAll(d.sessionDir(session)); err != nil {
		return fmt.Errorf("session store: %w", err)
	}
	return nil
}

// Images counts the images in the store and their bytes.
func (d *Dir) Images() (n int, bytes int64) {
	filepath.WalkDir(d.root, func(path string, e fs.DirEntry, err error) error {
		if err == nil && !e.IsDir() && strings.HasSuffix(path, ".img") {
			if fi, err := e.Info(); err == nil {
				n++
				bytes += fi.Size()
			}
		}
		return nil
	})
	return n, bytes
}

// writeFile writes data to path atomically: to a temporary file beside it,
// synced, then renamed over it.
func writeFile(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// Copy copies every image of session from to session to, over to's, and
// returns how many it copied.
func (d *Dir) Copy(from, to string) (int, error) {
	entries, err := os.ReadDir(d.sessionDir(from))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("session store: %w", err)
	}
	n := 0
	for _, en := range entries {
		if !strings.HasSuffix(en.Name(), ".img") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(d.sessionDir(from), en.Name()))
		if errors.Is(err, fs.ErrNotExist) {
			continue // resumed meanwhile
		}
		if err == nil {
			err = writeFile(filepath.Join(d.sessionDir(to), en.Name()), data)
		}
		if err != nil {
			return n, fmt.Errorf("session store: copying an image: %w", err)
		}
		n++
	}
	return n, nil
}

// Memory is a store in the process's memory: the images of kernels copied
// by a fork when no session store is set. It is safe for concurrent use.
type Memory struct {
	mu     sync.Mutex
	images map[string]map[string][]byte // by session, then kernel
}

// Put implements the store's Put.
func (m *Memory) Put(session, kernel string, data []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.images == nil {
		m.images = map[string]map[string][]byte{}
	}
	if m.images[session] == nil {
		m.images[session] = map[string][]byte{}
	}
	m.images[session][kernel] = data
	return nil
}

// Take implements the store's Take.
func (m *Memory) Take(session, kernel string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	data, ok := m.images[session][kernel]
	if !ok {
		return nil, ErrNotFound
	}
	delete(m.images[session], kernel)
	return data, nil
}

// Delete implements the store's Delete.
func (m *Memory) Delete(session string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.images, session)
	return nil
}

// Copy implements the store's Copy.
func (m *Memory) Copy(from, to string) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for kernel, data := range m.images[from] {
		if m.images[to] == nil {
			m.images[to] = map[string][]byte{}
		}
		m.images[to][kernel] = data
	}
	return len(m.images[from]), nil
}

// PutBase does nothing: images in memory resume in the process that made
// them, on its own snapshot.
func (m *Memory) PutBase(string, []byte) error { return nil }

// Base reports that a memory store keeps no snapshot.
func (m *Memory) Base(string) ([]byte, error) { return nil, ErrNotFound }

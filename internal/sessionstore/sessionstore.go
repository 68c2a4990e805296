// Package sessionstore keeps the images of suspended session kernels
// (code_execution.session_store): a dir on a local or shared file system,
// one subdir per session, one file per kernel. Writes are atomic (a
// temporary file renamed over the old one), so a reader sees a whole image
// or the previous one, never part of one.
package sessionstore

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gofrs/flock"
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
	dir := d.sessionDir(session)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("session store: %w", err)
	}
	for _, en := range entries {
		if en.Name() == "lease" {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, en.Name())); err != nil {
			return fmt.Errorf("session store: %w", err)
		}
	}
	os.Remove(dir) // when nothing (no lease) is left
	return nil
}

// Usage implements Store.
func (d *Dir) Usage() (n int, bytes int64, err error) {
	err = filepath.WalkDir(d.root, func(path string, e fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil // removed meanwhile
		}
		if err != nil {
			return err
		}
		if !e.IsDir() && strings.HasSuffix(path, ".img") {
			if fi, err := e.Info(); err == nil {
				n++
				bytes += fi.Size()
			}
		}
		return nil
	})
	if err != nil {
		err = fmt.Errorf("session store: %w", err)
	}
	return n, bytes, err
}

// SessionBytes implements Store.
func (d *Dir) SessionBytes(session, kernel string) (int64, error) {
	entries, err := os.ReadDir(d.sessionDir(session))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("session store: %w", err)
	}
	skip := filepath.Base(d.path(session, kernel))
	var total int64
	for _, en := range entries {
		if en.Name() == skip || !strings.HasSuffix(en.Name(), ".img") {
			continue
		}
		if fi, err := en.Info(); err == nil {
			total += fi.Size()
		}
	}
	return total, nil
}

// Sweep implements Store: images by their modification time, leases by
// their end.
func (d *Dir) Sweep(before time.Time) (int, error) {
	sessions, err := os.ReadDir(d.root)
	if err != nil {
		return 0, fmt.Errorf("session store: %w", err)
	}
	removed := 0
	for _, s := range sessions {
		if !s.IsDir() || s.Name() == "snapshots" {
			continue
		}
		if s.Name() == "handoff" {
			sweepHandoffs(filepath.Join(d.root, s.Name()), before)
			continue
		}
		dir := filepath.Join(d.root, s.Name())
		entries, _ := os.ReadDir(dir)
		for _, en := range entries {
			fi, err := en.Info()
			if err != nil {
				continue
			}
			switch {
			case strings.HasSuffix(en.Name(), ".img") && fi.ModTime().Before(before):
				if os.Remove(filepath.Join(dir, en.Name())) == nil {
					removed++
				}
			}
		}
		// Its expired lease, then the dir itself when that left it empty
		// (rmdir fails on a dir that is not: an image written meanwhile
		// stays, and a writer that finds the dir gone makes it again).
		d.withLock(func() error {
			path := filepath.Join(dir, "lease")
			if l, err := readLease(path); err == nil && l.Until.Before(before) {
				os.Remove(path)
			}
			os.Remove(dir)
			return nil
		})
	}
	return removed, nil
}

// writeFile writes data to path atomically: to a temporary file beside it,
// synced, then renamed over it.
func writeFile(path string, data []byte) error { return writeFileSync(path, data, true) }

// writeFileSync is writeFile, without the sync when sync is false: for
// leases and handoff requests, which a crash may lose (a lease then
// lapses, a request is asked again), but which are written in a call's
// path.
func writeFileSync(path string, data []byte, sync bool) error {
	dir := filepath.Dir(path)
	var f *os.File
	var err error
	for range 3 {
		if err = os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
		// Sweep may remove the dir, empty, between the two.
		if f, err = os.CreateTemp(dir, ".tmp-*"); !errors.Is(err, fs.ErrNotExist) {
			break
		}
	}
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil && sync {
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

// Acquire implements Store: the lease is a file beside the session's
// images, read and written under an flock(2) of the store's lock file
// (fcntl locks on NFS), so two processes never both win it. One lock for
// the store, not one per session: leases change a few times a minute per
// session, and a session's dir can then be removed (Sweep) without
// removing a lock file another process may hold.
func (d *Dir) Acquire(session, owner string, until time.Time, replace string) (Lease, error) {
	var got Lease
	path := filepath.Join(d.sessionDir(session), "lease")
	err := d.withLock(func() error {
		held, err := readLease(path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return err
		case held.Owner != owner && held.Owner != replace && time.Now().Before(held.Until):
			got = held
			return leasedError(session, held)
		}
		got = Lease{Owner: owner, Until: until}
		data, _ := json.Marshal(got)
		return writeFileSync(path, data, false)
	})
	return got, err
}

// Release implements Store.
func (d *Dir) Release(session, owner string) error {
	path := filepath.Join(d.sessionDir(session), "lease")
	return d.withLock(func() error {
		held, err := readLease(path)
		if err != nil || held.Owner != owner {
			return nil
		}
		return os.Remove(path)
	})
}

// withLock runs f holding the store's lease lock.
func (d *Dir) withLock(f func() error) error {
	lock := flock.New(filepath.Join(d.root, "lease.lock"))
	if err := lock.Lock(); err != nil {
		return fmt.Errorf("session store: locking the leases: %w", err)
	}
	defer lock.Unlock()
	if err := f(); err != nil {
		if errors.Is(err, ErrLeased) {
			return err
		}
		return fmt.Errorf("session store: lease: %w", err)
	}
	return nil
}

// readLease reads a lease file; a damaged one counts as none.
func readLease(path string) (Lease, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Lease{}, err
	}
	var l Lease
	if json.Unmarshal(data, &l) != nil {
		return Lease{}, fs.ErrNotExist
	}
	return l, nil
}

// handoffDir is owner's inbox of handoff requests.
func (d *Dir) handoffDir(owner string) string { return filepath.Join(d.root, "handoff", name(owner)) }

// AskHandoff implements Store: a file named for the session, holding its
// name, in the holder's inbox.
func (d *Dir) AskHandoff(holder, session string) error {
	if err := writeFileSync(filepath.Join(d.handoffDir(holder), name(session)), []byte(session), false); err != nil {
		return fmt.Errorf("session store: asking for a handoff: %w", err)
	}
	return nil
}

// Asked implements Store.
func (d *Dir) Asked(owner string) ([]string, error) {
	dir := d.handoffDir(owner)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("session store: %w", err)
	}
	var sessions []string
	for _, en := range entries {
		if strings.HasPrefix(en.Name(), ".tmp-") {
			continue
		}
		path := filepath.Join(dir, en.Name())
		data, err := os.ReadFile(path)
		if err == nil && os.Remove(path) == nil {
			sessions = append(sessions, string(data))
		}
	}
	return sessions, nil
}

// sweepHandoffs removes the handoff requests older than before, and the
// inboxes left empty.
func sweepHandoffs(root string, before time.Time) {
	inboxes, _ := os.ReadDir(root)
	for _, in := range inboxes {
		dir := filepath.Join(root, in.Name())
		entries, _ := os.ReadDir(dir)
		for _, en := range entries {
			if fi, err := en.Info(); err == nil && fi.ModTime().Before(before) {
				os.Remove(filepath.Join(dir, en.Name()))
			}
		}
		if fi, err := os.Stat(dir); err == nil && fi.ModTime().Before(before) {
			os.Remove(dir) // only when empty; an asker makes it again
		}
	}
}

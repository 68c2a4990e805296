// Package filecache is a directory of files bounded in total size, in the
// size of each file and in age, which several processes may share.
// web_extract keeps in one ($HERMES_HOME/cache/web) the full text of the
// pages it cuts to char_limit, for the script to page with read_file.
//
// An entry is a regular file named by the caller (a name with the cache's
// prefix and suffix, such as web-0a1b2c3d4e5f.md), holding exactly the
// bytes stored, so that read_file shows it as is. Beside the entries the
// directory holds the cache's index (.filecache-index.json: each entry's
// size, SHA-256 and when it was stored) and its lock file
// (.filecache.lock).
//
// # Bounds
//
// Each entry is charged [Cost] of its size: the size rounded up to 4 KiB
// blocks, plus 4 KiB for its inode, directory entry and index record. The
// charges of all entries never exceed [Limits].MaxBytes, at any moment:
// [Cache.Put] makes room for an entry (evicting the least recently used
// ones, and first every expired, damaged or untracked file) before it
// writes it, under an exclusive lock on the directory that every process
// using the cache takes. The lock is held only for work on the local disk
// (a scan of the directory, removals, one write of at most MaxEntryBytes,
// the index's rewrite), never across a network fetch. An entry over
// MaxEntryBytes is not stored. On Unix a removed file's blocks are
// returned when the last reader that has it open closes it; on Windows a
// file a reader holds open cannot be removed, and when no other file can
// make the room, Put stores nothing ([ErrNoRoom]) rather than go past the
// cap.
//
// # Access and expiry
//
// An entry's last access is its modification time, which the cache sets
// itself on [Cache.Put] and [Cache.Use] (nothing else writes an entry);
// the kernel's access time is not used, since noatime and relatime
// mounts do not keep it. An entry stored more than [Limits].TTL ago is
// not served ([Cache.Use] says [ErrExpired]) and is removed.
//
// # Crashes and damage
//
// A file is written to a temporary name, synced and renamed into place,
// then recorded in the index, which is itself replaced by a rename: a
// reader sees a whole entry or none. A file the index does not list (a
// crash between the rename and the index's update, or a file from an
// older version of this program), a file whose size differs from its
// record, and a temporary file left by a crash are removed at the next
// Put. Use checks the file's size and SHA-256 against the record and
// refuses ([ErrDamaged]) and removes a file that does not match.
package filecache

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gofrs/flock"
)

// Errors of [Cache.Put] and [Cache.Use]. Put's errors for an entry over
// the size limit are [*TooLargeError].
var (
	// ErrDisabled: the cache's MaxBytes is 0, so it stores nothing.
	ErrDisabled = errors.New("filecache: the cache is disabled")
	// ErrNoRoom: no entry could be removed to make room (on Windows,
	// readers hold them open), so nothing was stored.
	ErrNoRoom = errors.New("filecache: no room: the files that would make room cannot be removed now")
	// ErrNotEntry: the name is not a live entry of the cache: never
	// stored, already evicted or removed, or not listed by its index.
	ErrNotEntry = errors.New("filecache: not an entry of the cache")
	// ErrExpired: the entry was stored more than the TTL ago; it has been
	// removed.
	ErrExpired = errors.New("filecache: the entry expired")
	// ErrDamaged: the entry's file no longer holds what was stored
	// (truncated or changed); it has been removed.
	ErrDamaged = errors.New("filecache: the entry is damaged")
)

// TooLargeError is [Cache.Put]'s error for data over the entry size limit.
type TooLargeError struct {
	Size, Max int64 // the data's size and the limit, in bytes
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("filecache: %d bytes is over the entry limit of %d bytes", e.Size, e.Max)
}

// Limits bounds a cache.
type Limits struct {
	// MaxBytes caps the sum of the entries' charges ([Cost]). 0 or less
	// disables the cache: Put stores nothing and says [ErrDisabled].
	MaxBytes int64
	// MaxEntryBytes caps one entry's size; larger data is not stored. 0
	// or less, or more than MaxBytes allows, means what MaxBytes allows.
	MaxEntryBytes int64
	// TTL is how long an entry is served after it was stored. 0 or less
	// means entries do not expire.
	TTL time.Duration
	// Now is the clock; nil means time.Now. Tests set it.
	Now func() time.Time
}

// blockSize is the allocation unit an entry's charge rounds to, and what
// its inode, directory entry and index record are charged.
const blockSize = 4096

// Cost is what an entry of size bytes is charged against
// [Limits].MaxBytes: its size rounded up to 4 KiB, plus 4 KiB.
func Cost(size int64) int64 {
	return (size+blockSize-1)/blockSize*blockSize + blockSize
}

// Names of the cache's own files in its directory.
const (
	indexName = ".filecache-index.json"
	lockName  = ".filecache.lock"
)

// lockTimeout bounds the wait for the directory's lock when the caller's
// context has no earlier deadline: its holder only works on the local
// disk, so a longer wait means a stuck process.
const lockTimeout = 30 * time.Second

// Cache is one cache directory. Its methods are safe for concurrent use,
// and any number of Cache values, in any number of processes, may use the
// same directory.
type Cache struct {
	dir            string
	prefix, suffix string
	lim            Limits
	now            func() time.Time
}

// New returns the cache in dir (made absolute; created 0700 when first
// written) holding the files whose names start with prefix and end with
// suffix. Other files in dir are left alone. prefix must not be empty.
func New(dir, prefix, suffix string, lim Limits) (*Cache, error) {
	if prefix == "" || strings.HasPrefix(prefix, ".") || strings.ContainsAny(prefix+suffix, `/\`) {
		return nil, fmt.Errorf("filecache: invalid entry prefix %q or suffix %q", prefix, suffix)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	now := lim.Now
	if now == nil {
		now = time.Now
	}
	return &Cache{dir: abs, prefix: prefix, suffix: suffix, lim: lim, now: now}, nil
}

// Dir returns the cache's absolute directory.
func (c *Cache) Dir() string { return c.dir }

// Owns reports whether name (a base name) is one the cache may hold.
func (c *Cache) Owns(name string) bool {
	return len(name) > len(c.prefix)+len(c.suffix) && strings.HasPrefix(name, c.prefix) &&
		strings.HasSuffix(name, c.suffix) && !strings.ContainsAny(name, `/\`) && filepath.Base(name) == name
}

// entryMax is the largest data Put stores.
func (c *Cache) entryMax() int64 {
	// The largest size whose charge fits MaxBytes.
	most := (c.lim.MaxBytes - blockSize) / blockSize * blockSize
	if c.lim.MaxEntryBytes > 0 {
		return min(c.lim.MaxEntryBytes, most)
	}
	return most
}

// tempPattern names the temporary files the cache writes (entries and the
// index), which os.CreateTemp makes 0600. It also matches those of the
// versions before the index, so a crash's leftovers of theirs go too.
func (c *Cache) tempPattern() string { return "." + c.prefix + "*.tmp" }

func (c *Cache) isTemp(name string) bool {
	return strings.HasPrefix(name, "."+c.prefix) && strings.HasSuffix(name, ".tmp")
}

// record is an entry's line in the index.
type record struct {
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
	Stored int64  `json:"stored"` // Unix nanoseconds
}

// index is the index file's content.
type index struct {
	Version int               `json:"version"`
	Entries map[string]record `json:"entries"`
}

const indexVersion = 1

// loadIndex reads the index; a missing, unreadable or damaged one is
// empty (every entry file is then untracked and goes at the next Put).
func (c *Cache) loadIndex() map[string]record {
	data, err := os.ReadFile(filepath.Join(c.dir, indexName))
	if err != nil {
		return map[string]record{}
	}
	var idx index
	if json.Unmarshal(data, &idx) != nil || idx.Version != indexVersion || idx.Entries == nil {
		return map[string]record{}
	}
	return idx.Entries
}

// saveIndex replaces the index with entries, through a synced temporary
// file renamed into place.
func (c *Cache) saveIndex(entries map[string]record) error {
	data, err := json.Marshal(index{Version: indexVersion, Entries: entries})
	if err != nil {
		return err
	}
	return c.writeFile(filepath.Join(c.dir, indexName), data)
}

// writeFile writes data to path atomically: a temporary file in the same
// directory, synced, then renamed over path.
func (c *Cache) writeFile(path string, data []byte) error {
	tmp, err := os.CreateTemp(c.dir, c.tempPattern())
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// dirLocks holds one token per cache directory, so that the goroutines of
// one process take turns before they contend for the file lock (which
// excludes other processes, and other open files of this one).
var dirLocks sync.Map // dir → chan struct{} of capacity 1

// lock takes the directory's lock, waiting at most until ctx is done or
// lockTimeout has passed, and returns its release.
func (c *Cache) lock(ctx context.Context) (unlock func(), err error) {
	ctx, cancel := context.WithTimeout(ctx, lockTimeout)
	defer cancel()
	v, _ := dirLocks.LoadOrStore(c.dir, make(chan struct{}, 1))
	token := v.(chan struct{})
	select {
	case token <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("filecache: waiting for the lock of %s: %w", c.dir, ctx.Err())
	}
	fl := flock.New(filepath.Join(c.dir, lockName))
	ok, err := fl.TryLockContext(ctx, 5*time.Millisecond)
	if !ok || err != nil {
		<-token
		fl.Close()
		if err == nil {
			err = ctx.Err()
		}
		return nil, fmt.Errorf("filecache: waiting for the lock %s: %w", fl.Path(), err)
	}
	return func() {
		fl.Unlock()
		fl.Close()
		<-token
	}, nil
}

// live is an entry found by scan.
type live struct {
	name   string
	rec    record
	access time.Time
}

// state is the directory as scan found it, under the lock.
type state struct {
	entries map[string]live
}

// total is the sum of the entries' charges.
func (s *state) total() int64 {
	var t int64
	for _, e := range s.entries {
		t += Cost(e.rec.Size)
	}
	return t
}

// index is the index that lists s's entries.
func (s *state) index() map[string]record {
	m := make(map[string]record, len(s.entries))
	for n, e := range s.entries {
		m[n] = e.rec
	}
	return m
}

// expired reports whether an entry stored at stored is past the TTL.
func (c *Cache) expired(r record) bool {
	return c.lim.TTL > 0 && c.now().Sub(time.Unix(0, r.Stored)) > c.lim.TTL
}

// scan reads the index and the directory (under the lock), removes what
// must not stay (temporary files, untracked files, files whose size is not
// their record's, expired entries) and returns the live entries. A file
// that vanishes meanwhile is simply not listed.
func (c *Cache) scan() (*state, error) {
	idx := c.loadIndex()
	des, err := os.ReadDir(c.dir)
	if err != nil {
		return nil, err
	}
	s := &state{entries: make(map[string]live, len(idx))}
	for _, de := range des {
		name := de.Name()
		if c.isTemp(name) {
			// Only a holder of the lock writes one: this is a crash's.
			os.Remove(filepath.Join(c.dir, name))
			continue
		}
		if !c.Owns(name) || de.IsDir() {
			continue
		}
		info, err := de.Info()
		if err != nil {
			continue // gone meanwhile
		}
		r, tracked := idx[name]
		if !tracked || !info.Mode().IsRegular() || info.Size() != r.Size || c.expired(r) {
			os.Remove(filepath.Join(c.dir, name))
			continue
		}
		s.entries[name] = live{name: name, rec: r, access: info.ModTime()}
	}
	return s, nil
}

// makeRoom removes entries, least recently used first, until need more
// bytes of charge fit under MaxBytes.
func (c *Cache) makeRoom(s *state, need int64) error {
	total := s.total()
	if total+need <= c.lim.MaxBytes {
		return nil
	}
	order := make([]live, 0, len(s.entries))
	for _, e := range s.entries {
		order = append(order, e)
	}
	slices.SortFunc(order, func(a, b live) int {
		return cmp.Or(a.access.Compare(b.access), strings.Compare(a.name, b.name))
	})
	for _, e := range order {
		if total+need <= c.lim.MaxBytes {
			break
		}
		if err := os.Remove(filepath.Join(c.dir, e.name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			continue // held open (Windows): still there, still counted
		}
		total -= Cost(e.rec.Size)
		delete(s.entries, e.name)
	}
	if total+need > c.lim.MaxBytes {
		return ErrNoRoom
	}
	return nil
}

// Put stores data as the entry name and returns its absolute path. When
// the entry is already stored with the same bytes it is kept, and counts
// as stored and used now. To make room it first removes what [Cache.Put]'s
// scan removes, then the least recently used entries. Data over the entry
// limit is a [*TooLargeError]; with MaxBytes 0, [ErrDisabled].
func (c *Cache) Put(ctx context.Context, name string, data []byte) (string, error) {
	if !c.Owns(name) {
		return "", fmt.Errorf("filecache: %q is not a name this cache holds (%s*%s)", name, c.prefix, c.suffix)
	}
	if c.lim.MaxBytes <= 0 {
		return "", ErrDisabled
	}
	size := int64(len(data))
	if limit := c.entryMax(); size > limit {
		return "", &TooLargeError{Size: size, Max: limit}
	}
	if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return "", err
	}
	unlock, err := c.lock(ctx)
	if err != nil {
		return "", err
	}
	defer unlock()
	s, err := c.scan()
	if err != nil {
		return "", err
	}
	path := filepath.Join(c.dir, name)
	sum := sha256.Sum256(data)
	now := c.now()
	rec := record{Size: size, SHA256: hex.EncodeToString(sum[:]), Stored: now.UnixNano()}
	if e, ok := s.entries[name]; ok {
		if e.rec.SHA256 == rec.SHA256 && sameContent(path, data) {
			if err := os.Chtimes(path, now, now); err == nil {
				s.entries[name] = live{name: name, rec: rec, access: now}
				// A cap lowered since the others were stored holds here too.
				_ = c.makeRoom(s, 0)
				if _, ok := s.entries[name]; !ok {
					return "", errors.Join(ErrNoRoom, c.saveIndex(s.index()))
				}
				return path, c.saveIndex(s.index())
			}
		}
		// Damaged, or other bytes under the same name: replaced.
		os.Remove(path)
		delete(s.entries, name)
	}
	if err := c.makeRoom(s, Cost(size)); err != nil {
		return "", errors.Join(err, c.saveIndex(s.index()))
	}
	if err := c.writeFile(path, data); err != nil {
		return "", errors.Join(err, c.saveIndex(s.index()))
	}
	if err := os.Chtimes(path, now, now); err != nil {
		os.Remove(path)
		return "", errors.Join(err, c.saveIndex(s.index()))
	}
	s.entries[name] = live{name: name, rec: rec, access: now}
	if err := c.saveIndex(s.index()); err != nil {
		// Unlisted, the file would go at the next scan anyway.
		os.Remove(path)
		return "", err
	}
	return path, nil
}

// sameContent reports whether the file at path holds exactly data.
func sameContent(path string, data []byte) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	got, err := io.ReadAll(io.LimitReader(f, int64(len(data))+1))
	return err == nil && bytes.Equal(got, data)
}

// Use checks that name is a live entry, whole and not expired, and records
// an access to it (its modification time becomes now). It returns
// [ErrNotEntry] for a name the index does not list or whose file is gone;
// [ErrExpired] or [ErrDamaged] for an entry past the TTL or whose file does
// not hold what was stored, after removing the file. It hashes the whole
// file, under the directory's lock.
func (c *Cache) Use(ctx context.Context, name string) error {
	if !c.Owns(name) {
		return ErrNotEntry
	}
	if _, err := os.Stat(c.dir); err != nil {
		return ErrNotEntry
	}
	unlock, err := c.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	r, ok := c.loadIndex()[name]
	if !ok {
		return ErrNotEntry
	}
	path := filepath.Join(c.dir, name)
	if c.expired(r) {
		os.Remove(path)
		return ErrExpired
	}
	switch ok, err := matches(path, r); {
	case errors.Is(err, fs.ErrNotExist):
		return ErrNotEntry
	case err != nil:
		return err
	case !ok:
		os.Remove(path)
		return ErrDamaged
	}
	now := c.now()
	if err := os.Chtimes(path, now, now); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return ErrNotEntry
		}
		return err
	}
	return nil
}

// matches reports whether the regular file at path has r's size and
// SHA-256.
func matches(path string, r record) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return false, err
	}
	if !info.Mode().IsRegular() || info.Size() != r.Size {
		return false, nil
	}
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(f, r.Size+1))
	if err != nil {
		return false, err
	}
	return n == r.Size && hex.EncodeToString(h.Sum(nil)) == r.SHA256, nil
}

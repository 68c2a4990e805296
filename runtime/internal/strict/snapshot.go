package strict

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"

	"github.com/hermes-agent/hermes-wasm-exec/internal/engine"
	"github.com/hermes-agent/hermes-wasm-exec/internal/trust"
)

// A snapshot is the interpreter's linear memory right after it has
// initialised and imported preinitCode's modules, taken once (per engine,
// and on disk per cache dir) and given to every later instance instead of
// running that start-up again: the technique of Wizer, which no Go runtime
// offers. An instance restored from it skips the interpreter's own start
// (40–50 ms on the 2-core VM of docs/performance.md) and the imports.
//
// The module's C side (pyodide-assets/cpython/hermes_host.c) splits its
// start in two: hermes_preinit initialises the interpreter and returns
// with it alive; hermes_run, in an instance whose memory is the snapshot,
// takes the instance's own arguments and environment and runs its -c
// command. The linear memory is all the state there is to save: the
// table is never changed at run time, the only mutable global the code
// changes (the stack pointer) is back at its initial value once
// hermes_preinit has returned, and the loop-check budget needs no value
// in particular. The host side of WASI starts afresh in every instance;
// what libc keeps of it in memory (the preopened directories, by file
// descriptor and path) matches because every instance mounts the same
// paths in the same order (see newSandbox).
//
// What an interpreter reads only at initialisation is the snapshot's: the
// flags -S and -u, the PYTHON* variables other than PYTHONPATH, the hash
// seed. So an instance uses the snapshot only when its PYTHON* variables
// are snapshotEnv's (every engine run's are: the executor sets them); any
// other gets a full start (hermes_main). Every run restored from one
// snapshot file shares its string hash seed, as runs with one
// PYTHONHASHSEED do, for as long as the file is kept (another cache dir
// has another). Libc's clock() counts from a start a constructor recorded
// in the snapshot, so a restored instance's monotonic clock continues from
// the snapshot's reading (snapshot.clock) instead of the host's.

// preinitCode is what the snapshot's interpreter runs before its memory
// is saved: the modules nearly every run imports (json: the tool calls'
// codec; os: the generated hermes_tools module's, 1.3 ms), with what they
// import in turn. (os.environ is a view of posix.environ, which
// hermes_run fills afresh.)
const preinitCode = "import json, os"

// snapshotSetup runs after the preinit code, last before the memory is
// saved: it gives the module _hermes_host the quick way out of a one-shot
// run (_run_and_exit, see oneShotCommand), builds what the first
// compile() builds, and freezes the garbage collector's view of the
// snapshot (gc.freeze): a run's collections, and the one at its end,
// visit only the objects it made.
//
//go:embed snapshot_setup.py
var snapshotSetup string

// snapshotProgram is the -c program of the snapshot's interpreter.
func snapshotProgram(preinit string) string { return preinit + "\n" + snapshotSetup }

// snapshotFormat names the on-disk layout and the entry points' contract;
// a change of either changes it.
const snapshotFormat = "hermes-wasm-exec interpreter snapshot v2"

// snapshotEnv is the environment of the snapshot's interpreter, and the
// PYTHON* variables an instance must have (with these values, PYTHONPATH
// aside) to start from it.
func snapshotEnv() []string {
	return append(engine.BaseInject(), guestEnv...)
}

// snapshotEligible reports whether an instance with environment env may
// start from the snapshot: its PYTHON* variables other than PYTHONPATH
// are exactly snapshotEnv's. (The interpreter reads them at
// initialisation, which the snapshot has done already.)
func snapshotEligible(env []string) bool {
	want := map[string]string{}
	for _, kv := range snapshotEnv() {
		k, v, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "PYTHON") {
			want[k] = v
		}
	}
	got := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "PYTHON") && k != "PYTHONPATH" {
			got[k] = v // the last value wins, as in the guest's environ
		}
	}
	if len(got) != len(want) {
		return false
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			return false
		}
	}
	return true
}

// nanotimeResolution is the guest's monotonic clock resolution (1 µs, as
// wazero's WithSysNanotime).
const nanotimeResolution = sys.ClockResolution(1000)

// snapshot is one saved linear memory.
type snapshot struct {
	image []byte // the whole memory, a multiple of wasmPage
	zero  []bool // per wasm page of image: all zero
	// nanotime is the guest's monotonic clock when the memory was saved.
	nanotime int64

	// shared is the image in a sealed memfd, mapped copy-on-write into
	// each instance (Linux; nil: restore copies). Never closed: the
	// engine keeps its snapshot for the process's life.
	sharedOnce sync.Once
	shared     *os.File

	// sum is the SHA-256 of image, hex (digest), which a suspended
	// kernel's image names.
	digestOnce sync.Once
	sum        string
}

func newSnapshot(image []byte) *snapshot {
	s := &snapshot{image: image, zero: make([]bool, len(image)/wasmPage)}
	for i := range s.zero {
		s.zero[i] = isZero(image[i*wasmPage : (i+1)*wasmPage])
	}
	return s
}

// isZero reports whether b is all zero bytes.
func isZero(b []byte) bool {
	for len(b) >= 8 {
		if binary.LittleEndian.Uint64(b) != 0 {
			return false
		}
		b = b[8:]
	}
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// restores counts the instances restored from a snapshot, mappedRestores
// those of them that mapped the shared image, and snapshotsMade the
// snapshots made (tests check which path was taken).
var restores, mappedRestores, snapshotsMade atomic.Int64

// clock returns the monotonic clock of an instance restored from s: it
// continues from s's reading, as if the instance had run on from the
// snapshot (clock() and time.process_time() then count the interpreter's
// start-up once, as in a native python).
func (s *snapshot) clock() sys.Nanotime {
	start := time.Now()
	return func() int64 { return s.nanotime + int64(time.Since(start)) }
}

// restore makes mem, a freshly instantiated interpreter's memory, the
// snapshot's: it grows it to the snapshot's size, then maps the shared
// image over it copy-on-write (on Linux, when the memory is a reservation
// of im: pages the instance only reads are shared by every instance of
// the process), or else writes the pages that differ (pages zero in both
// are not touched, so they cost no resident memory).
func (s *snapshot) restore(mem api.Memory, im *instanceMemory, share bool) error {
	restores.Add(1)
	size := uint32(len(s.image))
	cur := mem.Size()
	if cur > size {
		return fmt.Errorf("restoring the interpreter snapshot: the instance starts with %d bytes of memory, the snapshot has %d", cur, size)
	}
	if cur < size {
		if _, ok := mem.Grow((size - cur) / wasmPage); !ok {
			return fmt.Errorf("restoring the interpreter snapshot: cannot grow the memory to %d MiB (the memory limit is lower)", size>>20)
		}
	}
	if share {
		s.sharedOnce.Do(func() { s.shared = newSharedImage(s) })
	}
	if r := im.linear(); share && s.shared != nil && r != nil && uint64(size) <= r.committed {
		// A failed MAP_FIXED may have unmapped the range: the instance
		// cannot go on, even by copying.
		if err := r.mapImage(s.shared, int(size)); err != nil {
			return fmt.Errorf("restoring the interpreter snapshot: mapping it: %w", err)
		}
		mappedRestores.Add(1)
		return nil
	}
	if im.scratched() {
		// Never run on the scratch, which every instance shares.
		return errors.New("restoring the interpreter snapshot: its image cannot be mapped over the instance's memory")
	}
	buf, ok := mem.Read(0, size)
	if !ok {
		return errors.New("restoring the interpreter snapshot: memory read failed")
	}
	for i, zero := range s.zero {
		off := uint32(i) * wasmPage
		dst := buf[off : off+wasmPage]
		switch {
		case !zero:
			copy(dst, s.image[off:off+wasmPage])
		case off < cur && !isZero(dst):
			// Grown pages are zero already; the first ones hold the
			// module's data segments.
			clear(dst)
		}
	}
	return nil
}

// snapshotKey names the snapshot of one interpreter and standard library:
// a hex sha256 over everything the image depends on.
func snapshotKey(wasmSum, stdlibSum, program string) string {
	h := sha256.New()
	parts := append([]string{snapshotFormat, wasmSum, stdlibSum, program}, instanceMounts...)
	for _, part := range append(parts, snapshotEnv()...) {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// The file format: snapshotFormat and a newline, the image's length
// (uint64), the guest's monotonic clock when it was saved (int64, ns), the
// number of stored pages (uint32), then each page that is
// not all zero as its index (uint32) and its bytes; last, the CRC-32C of
// everything before it (uint32). Little-endian throughout. The checksum
// catches damage, not an attacker; a damaged or foreign file is made
// again. What keeps an attacker's file out is who can write it: a file
// or cache dir another user could have written is not used (untrusted),
// and on Linux the processes a run starts cannot write the cache dir
// (internal/landlock). The executor's user, outside those processes, is
// trusted with it as with wazero's compiled code beside it (SECURITY.md).
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func (s *snapshot) marshal() []byte {
	var out bytes.Buffer
	out.WriteString(snapshotFormat + "\n")
	stored := 0
	for _, z := range s.zero {
		if !z {
			stored++
		}
	}
	out.Write(binary.LittleEndian.AppendUint64(nil, uint64(len(s.image))))
	out.Write(binary.LittleEndian.AppendUint64(nil, uint64(s.nanotime)))
	out.Write(binary.LittleEndian.AppendUint32(nil, uint32(stored)))
	for i, z := range s.zero {
		if !z {
			out.Write(binary.LittleEndian.AppendUint32(nil, uint32(i)))
			out.Write(s.image[i*wasmPage : (i+1)*wasmPage])
		}
	}
	out.Write(binary.LittleEndian.AppendUint32(nil, crc32.Checksum(out.Bytes(), castagnoli)))
	return out.Bytes()
}

var errBadSnapshot = errors.New("not a snapshot file of this version, or damaged")

func unmarshalSnapshot(b []byte, limit uint64) (*snapshot, error) {
	head := snapshotFormat + "\n"
	if len(b) < len(head)+24 || string(b[:len(head)]) != head {
		return nil, errBadSnapshot
	}
	body, sum := b[:len(b)-4], binary.LittleEndian.Uint32(b[len(b)-4:])
	if crc32.Checksum(body, castagnoli) != sum {
		return nil, errBadSnapshot
	}
	r := body[len(head):]
	size, nanotime, stored := binary.LittleEndian.Uint64(r), int64(binary.LittleEndian.Uint64(r[8:])), binary.LittleEndian.Uint32(r[16:])
	r = r[20:]
	if nanotime < 0 || size == 0 || size%wasmPage != 0 || size > limit || uint64(stored) > size/wasmPage || uint64(len(r)) != uint64(stored)*(4+wasmPage) {
		return nil, errBadSnapshot
	}
	image := make([]byte, size)
	for range stored {
		i := uint64(binary.LittleEndian.Uint32(r))
		if (i+1)*wasmPage > size {
			return nil, errBadSnapshot
		}
		copy(image[i*wasmPage:], r[4:4+wasmPage])
		r = r[4+wasmPage:]
	}
	snap := newSnapshot(image)
	snap.nanotime = nanotime
	return snap, nil
}

// snapshotPath is where the engine keeps the snapshot of the module and
// standard library with these hex sha256s.
func (s *Engine) snapshotPath(wasmSum, stdlibSum string) string {
	return snapshotFile(s.cacheDir(), wasmSum, stdlibSum, s.snapshotProgram())
}

// snapshotProgram is the -c program of the engine's snapshot.
func (s *Engine) snapshotProgram() string {
	return snapshotProgram(cmp.Or(s.opts.preinit, preinitCode))
}

// SnapshotFile is where an engine with cacheDir keeps the interpreter
// snapshot of the module and standard library with these hex sha256s
// (doctor shows it).
func SnapshotFile(cacheDir, wasmSHA256, stdlibSHA256 string) string {
	return snapshotFile(cacheDir, wasmSHA256, stdlibSHA256, snapshotProgram(preinitCode))
}

func snapshotFile(cacheDir, wasmSum, stdlibSum, program string) string {
	return filepath.Join(cacheDir, "snapshot-"+snapshotKey(wasmSum, stdlibSum, program)[:16]+".bin")
}

// snapshotRead is what readSnapshotFile found: the snapshot, or nil and,
// when the file was there but refused, why.
type snapshotRead struct {
	snap    *snapshot
	refused string
}

// readSnapshotFile reads and checks the snapshot file at path, and shares
// its image (newSharedImage); no snapshot when there is none, it is
// damaged, or it may hold what another user wrote (owned by another user,
// or writable by others: see untrusted; the cache dir above it was checked
// already). compile runs it beside wazero's CompileModule, which keeps one
// core busy validating the module (RATIONALE.md), so a one-shot run does
// not wait for it.
func readSnapshotFile(path string) snapshotRead {
	f, err := os.Open(path)
	if err != nil {
		return snapshotRead{}
	}
	defer f.Close()
	// Checked once open: the cache dir is not writable by others, so the
	// file cannot be swapped for another since.
	if why := trust.Untrusted(path); why != "" {
		return snapshotRead{refused: why}
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return snapshotRead{}
	}
	snap, err := unmarshalSnapshot(b, maxMemory)
	if err != nil {
		return snapshotRead{}
	}
	snap.sharedOnce.Do(func() { snap.shared = newSharedImage(snap) })
	return snapshotRead{snap: snap}
}

// ensureSnapshot loads the engine's snapshot from the cache dir or makes
// it, once per engine, with c's runtime. Without one every instance
// starts the interpreter in full (slower, nothing else changes); the
// reason is told on Progress once.
func (s *Engine) ensureSnapshot(ctx context.Context, c *compiled) {
	s.snapOnce.Do(func() {
		if s.opts.noSnapshot {
			return
		}
		snap, err := s.loadOrMakeSnapshot(ctx, c)
		if err != nil {
			fmt.Fprintf(s.opts.Progress, "hermes-wasm-exec: no interpreter snapshot (%v); every run starts the interpreter in full, ~50 ms slower\n", err)
			return
		}
		s.snap.Store(snap)
	})
}

func (s *Engine) loadOrMakeSnapshot(ctx context.Context, c *compiled) (*snapshot, error) {
	path := ""
	if s.cacheDir() != "" {
		path = s.snapshotPath(c.wasmSum, c.stdlibSum)
		if s.snapFile != nil {
			read := <-s.snapFile
			if read.snap != nil {
				return read.snap, nil
			}
			if read.refused != "" {
				fmt.Fprintf(s.opts.Progress, "hermes-wasm-exec: not using the interpreter snapshot %s: %s, so another user could have written it; making a new one\n", path, read.refused)
			}
		}
	}
	snap, err := s.makeSnapshot(ctx, c)
	if err != nil {
		return nil, err
	}
	if path != "" {
		// Written whole or not at all: a temp file renamed into place.
		// A failure costs only the next process the start-up again.
		if f, err := os.CreateTemp(s.cacheDir(), ".snapshot-*"); err == nil {
			_, werr := f.Write(snap.marshal())
			if cerr := f.Close(); werr == nil && cerr == nil {
				werr = os.Rename(f.Name(), path)
			}
			if werr != nil {
				os.Remove(f.Name())
			}
		}
	}
	return snap, nil
}

// makeSnapshot starts an interpreter with hermes_preinit in an empty
// sandbox (the same mounts as every instance: see newSandbox) and copies
// its memory. Its memory allocator is its own, without the engine's cap:
// the snapshot serves every cap it fits in.
func (s *Engine) makeSnapshot(ctx context.Context, c *compiled) (*snapshot, error) {
	box, err := s.newSandbox(ctx, c, sandboxSpec{})
	if err != nil {
		return nil, fmt.Errorf("making the interpreter snapshot: %w", err)
	}
	defer box.close()
	box.env = snapshotEnv()
	var stdout, stderr guestOutput
	errs := &boundedBuffer{max: maxStartStderr}
	stdout.discard()
	stderr.set(errs, 0)
	// The guest's monotonic clock starts at 0 here; the snapshot keeps its
	// reading for the instances restored from it (snapshot.clock).
	start := time.Now()
	mc := box.moduleConfig(&stdout, &stderr).WithArgs("python", "-S", "-u", "-c", s.snapshotProgram()).
		WithNanotime(func() int64 { return int64(time.Since(start)) }, nanotimeResolution)
	var snap *snapshot
	err = s.startWith(box.ctx, c, mc, instanceOptions{mem: newInstanceMemory(0), entry: func(ctx context.Context, mod api.Module) error {
		if _, err := mod.ExportedFunction("_initialize").Call(ctx); err != nil {
			return err
		}
		res, err := mod.ExportedFunction("hermes_preinit").Call(ctx)
		if err != nil {
			return err
		}
		if res[0] != 0 {
			return fmt.Errorf("the interpreter's start failed: %s", strings.TrimSpace(errs.String()))
		}
		mem := mod.Memory()
		b, _ := mem.Read(0, mem.Size())
		snap = newSnapshot(bytes.Clone(b))
		snap.nanotime = int64(time.Since(start))
		return nil
	}})
	stderr.discard()
	if err != nil {
		return nil, fmt.Errorf("making the interpreter snapshot: %w", err)
	}
	snapshotsMade.Add(1)
	return snap, nil
}

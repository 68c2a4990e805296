package strict

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/gob"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/hermes-agent/hermes-wasm-exec/internal/engine"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"
)

// Suspending a session kernel between its cells, and resuming it in a new
// instance. A kernel runs in steps (kernel.go): between cells no call into
// the module is in progress and its stack pointer is back at its initial
// value, so the interpreter's whole state is its linear memory, as a
// snapshot's is (the module's other mutable global, the loop budget, needs
// no value in particular; its table never changes). The host side adds
// the private dir's files and the cell counter. An image is that memory as
// the 4 KiB chunks that differ from the engine's snapshot (the kernel's
// start), the files, and the counters; gob-encoded and compressed with
// s2 (see marshal), with a CRC-32C over the whole file.
//
// Open files go with it: the WASI descriptor table lives in wazero, out of
// reach, so the host follows what the guest opened (fdtable.go) and the
// resumed kernel reopens each at its number and offset. A kernel over a
// working dir (the sandboxed project mode) holds that dir's host path in
// its memory: its image names the dir, and resumes over it only. What is
// not kept, and so refuses a suspension (the kernel is then closed as
// before): open directories (os.scandir iterators), and a kernel that did
// not start from the snapshot.

// imageFormat opens every image file; a change to Image or its encoding
// changes it. imageFormatV1's images (before Open and ImageFile.Ino) read
// as they are: gob leaves the new fields zero.
const (
	imageFormat   = "hermes-wasm-exec kernel image 2\n"
	imageFormatV1 = "hermes-wasm-exec kernel image 1\n"
	// imageFormatZstd is imageFormat's with a zstd stream for the s2 one
	// (Options.SmallImages).
	imageFormatZstd = "hermes-wasm-exec kernel image 2 zstd\n"
)

// The zstd coders of small images: one each for the process (both are
// safe for concurrent use; EncodeAll and DecodeAll need no stream state).
var (
	zstdEncoder, _ = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
	zstdDecoder, _ = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(maxImageMemory+maxImageHead+(64<<20)))
)

// imageChunk is the unit of an image's memory: smaller than a wasm page,
// since a kernel's cells write Python's heap here and there.
const imageChunk = 4096

// Image is a strict session kernel suspended between cells (see
// [Engine.SuspendKernel], [Engine.ResumeKernel]).
type Image struct {
	// WasmSum and StdlibSum name the interpreter and standard library the
	// kernel ran; BaseSum the snapshot its memory is a difference from.
	WasmSum, StdlibSum, BaseSum string
	// Size is the linear memory's size in bytes.
	Size uint64
	// Nanotime is the guest's monotonic clock when it was suspended.
	Nanotime int64
	// Cells is how many cells the kernel had been sent.
	Cells int
	// Chunks are the indexes of the imageChunk-sized pieces of memory that
	// differ from the snapshot (zero past its end); Data their bytes, in
	// that order.
	Chunks []uint32
	Data   []byte
	// Files are the private dir's files and dirs but the generated
	// modules, parents first.
	Files []ImageFile
	// Fork: a copy of a kernel that goes on (CopyKernel); the resumed one
	// seeds its random module afresh.
	Fork bool
	// Open are the files the kernel held open, which the resumed kernel
	// reopens at the same descriptors and offsets before its first cell.
	Open []OpenFile
	// Workdir is the host dir a sandboxed project-mode kernel ran over
	// ("" for a strict one): its memory holds that path (its cwd, its
	// sys.path), so it resumes over the same dir only. The dir's files are
	// not in the image: they are the project's, where they are.
	Workdir string
}

// ImageFile is a file or dir of a suspended kernel's private dir.
type ImageFile struct {
	Path  string // relative, with slashes
	Dir   bool
	Mode  fs.FileMode
	MTime int64 // Unix nanoseconds
	Data  []byte
	// Ino is the inode number the guest knew the file by (0: unknown):
	// the resumed kernel's guest sees the restored file by it (jailFS.inos).
	Ino uint64
}

// Errors of a suspension or a resume.
var (
	// ErrNotSuspendable: the kernel holds what an image cannot keep.
	ErrNotSuspendable = errors.New("the kernel cannot be suspended")
	// ErrImageDamaged: the image fails its checksum or does not decode.
	ErrImageDamaged = errors.New("the suspended kernel's image is damaged")
	// ErrImageStale: the image was made by another interpreter build.
	ErrImageStale = errors.New("the suspended kernel's image was made by another interpreter build")
)

// SuspendKernel suspends k, a kernel of this engine that is not running a
// cell (it waits for the one running), and returns its image, encoded,
// and the sum of the snapshot it is a difference from (see
// [Engine.EncodedSnapshot]). k is then closed without its interpreter
// being finalised: its atexit functions run when it ends for good, not
// here. When k cannot be suspended the error wraps ErrNotSuspendable and
// says why, and k is left as it was.
func (s *Engine) SuspendKernel(ctx context.Context, k engine.Kernel) (image []byte, base string, err error) {
	sk, ok := k.(*strictKernel)
	if !ok {
		return nil, "", fmt.Errorf("%w: not a strict-mode kernel", ErrNotSuspendable)
	}
	img, err := sk.suspend(ctx)
	if err != nil {
		return nil, "", err
	}
	image, err = img.marshal(s.opts.SmallImages)
	return image, img.BaseSum, err
}

// CopyKernel returns an image of k as it is, like SuspendKernel, but k goes
// on: ResumeKernel then starts a second kernel with k's state (a fork),
// whose random module is seeded afresh when it starts, as a forked
// process's is.
func (s *Engine) CopyKernel(ctx context.Context, k engine.Kernel) (image []byte, base string, err error) {
	sk, ok := k.(*strictKernel)
	if !ok {
		return nil, "", fmt.Errorf("%w: not a strict-mode kernel", ErrNotSuspendable)
	}
	img, err := sk.capture(ctx, false)
	if err != nil {
		return nil, "", err
	}
	img.Fork = true
	image, err = img.marshal(s.opts.SmallImages)
	return image, img.BaseSum, err
}

// BaseFunc returns the encoded snapshot whose sum is sum, as
// [Engine.EncodedSnapshot] gave it (a session store keeps them).
type BaseFunc func(sum string) ([]byte, error)

// ResumeKernel starts a kernel from an image SuspendKernel made, with spec
// as the suspended kernel's (its environment is in the image's memory and
// stays as it was). An image made against another snapshot than the
// engine's (the process restarted and made a new one) needs base to give
// that one. A sandboxed project-mode kernel's image resumes with project
// (the options it ran with) over the working dir it ran over
// (spec.Workdir), a strict one's without. It fails with ErrImageDamaged
// or ErrImageStale, and then starts nothing.
func (s *Engine) ResumeKernel(ctx context.Context, spec engine.KernelSpec, project *ProjectOptions, data []byte, base BaseFunc) (engine.Kernel, error) {
	img, err := unmarshalImage(data)
	if err != nil {
		return nil, err
	}
	switch {
	case img.Workdir == "" && project != nil:
		return nil, fmt.Errorf("%w: a strict-mode kernel's image, resumed as a sandboxed project-mode one", ErrImageStale)
	case img.Workdir != "" && project == nil:
		return nil, fmt.Errorf("%w: a sandboxed project-mode kernel's image, resumed as a strict-mode one", ErrImageStale)
	case img.Workdir != "":
		if dir, err := filepath.Abs(spec.Workdir); err != nil || dir != img.Workdir {
			return nil, fmt.Errorf("%w: its kernel ran over %s, not %s", ErrImageStale, img.Workdir, spec.Workdir)
		}
	}
	k, err := s.startKernel(ctx, spec, project, img, base)
	if err != nil {
		return nil, err
	}
	sk := k.(*strictKernel)
	d := sk.d
	if len(img.Open) > 0 {
		files := make([]map[string]any, len(img.Open))
		w := &reopenWindow{first: int32(3 + len(sk.box.mounts)), to: map[int32]bool{}}
		for i, f := range img.Open {
			files[i] = f.reopenSpec()
			if f.FD < w.first || f.FD >= w.first+maxOpenFiles {
				k.Close()
				return nil, fmt.Errorf("%w: an open file's descriptor (%d) is out of range", ErrImageDamaged, f.FD)
			}
			w.to[f.FD] = true
		}
		// Set and cleared between steps: the guest runs only in Reopen.
		sk.box.channel.reopen = w
		err := d.Reopen(ctx, files)
		sk.box.channel.reopen = nil
		if err != nil {
			k.Close()
			return nil, fmt.Errorf("resuming the kernel: a file it held open did not reopen: %w", err)
		}
	}
	if img.Fork {
		if err := d.Reseed(ctx); err != nil {
			k.Close()
			return nil, fmt.Errorf("resuming a copied kernel: %w", err)
		}
	}
	return k, nil
}

// EncodedSnapshot returns the snapshot whose sum is sum (the engine's, or
// one a resume loaded), encoded, for a store to keep beside the images
// made against it.
func (s *Engine) EncodedSnapshot(sum string) ([]byte, error) {
	if sn := s.snap.Load(); sn != nil && sn.digest() == sum {
		return sn.marshal(), nil
	}
	s.baseMu.Lock()
	defer s.baseMu.Unlock()
	if s.base != nil && s.base.digest() == sum {
		return s.base.marshal(), nil
	}
	return nil, fmt.Errorf("no snapshot %.12s in this process", sum)
}

// resumeBase is the snapshot img was made against, checked to resume on
// c: the engine's, the one a resume last loaded, or the one base gives.
func (s *Engine) resumeBase(c *compiled, img *Image, base BaseFunc) (*snapshot, error) {
	if img.WasmSum != c.wasmSum || img.StdlibSum != c.stdlibSum {
		return nil, ErrImageStale
	}
	if img.Size > c.limit+graceBytes {
		return nil, fmt.Errorf("resuming the kernel: its memory (%d MiB) is above the memory limit", img.Size>>20)
	}
	if sn := s.snap.Load(); sn != nil && sn.digest() == img.BaseSum {
		return sn, nil
	}
	s.baseMu.Lock()
	defer s.baseMu.Unlock()
	if s.base != nil && s.base.digest() == img.BaseSum {
		return s.base, nil
	}
	if base == nil {
		return nil, fmt.Errorf("%w: it was made against another interpreter snapshot", ErrImageStale)
	}
	data, err := base(img.BaseSum)
	if err != nil {
		return nil, fmt.Errorf("%w: the snapshot it was made against is not at hand (%v)", ErrImageStale, err)
	}
	snap, err := unmarshalSnapshot(data, c.limit+graceBytes)
	if err != nil || snap.digest() != img.BaseSum {
		return nil, fmt.Errorf("%w: the snapshot it was made against is damaged", ErrImageDamaged)
	}
	s.base = snap
	return snap, nil
}

// suspend captures k's state and closes its instance.
func (k *strictKernel) suspend(ctx context.Context) (*Image, error) {
	return k.capture(ctx, true)
}

// capture captures k's state between cells; with end, it then closes
// k's instance without finalising its interpreter.
func (k *strictKernel) capture(ctx context.Context, end bool) (*Image, error) {
	select {
	case k.turn <- struct{}{}:
		defer func() { <-k.turn }()
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	k.mu.Lock()
	mod, base, clock := k.mod, k.base, k.clock
	k.mu.Unlock()
	switch {
	case !k.Alive() || mod == nil:
		return nil, fmt.Errorf("%w: it has ended", ErrNotSuspendable)
	case base == nil:
		return nil, fmt.Errorf("%w: it did not start from the interpreter snapshot", ErrNotSuspendable)
	}
	// The guest's descriptors past stdio and the preopened mounts: wazero
	// keeps their table, which an image cannot; the host's record of what
	// each was opened at (fdtable.go) and the offset the guest reports
	// let the resumed kernel reopen them.
	fds, offsets, err := k.d.Probe(ctx, 3+len(k.box.mounts))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotSuspendable, err)
	}
	open, err := k.openFiles(fds, offsets)
	if err != nil {
		return nil, err
	}
	// The loop waits in Take, outside the interpreter, and the turn keeps
	// any cell from starting: nothing runs in the instance while its
	// memory is read.
	mem := mod.Memory()
	size := mem.Size()
	buf, ok := mem.Read(0, size)
	if !ok {
		return nil, errors.New("suspending the kernel: reading its memory failed")
	}
	img := &Image{WasmSum: k.sums.wasm, StdlibSum: k.sums.stdlib, BaseSum: base.digest(), Size: uint64(size),
		Nanotime: clock(), Cells: k.d.Cells(), Open: open}
	if k.box.hostDir != "" {
		if img.Workdir, err = filepath.Abs(k.box.hostDir); err != nil {
			return nil, err
		}
	}
	var zero [imageChunk]byte
	for off := uint32(0); off < size; off += imageChunk {
		was := zero[:]
		if int(off)+imageChunk <= len(base.image) {
			was = base.image[off : off+imageChunk]
		}
		if !bytes.Equal(buf[off:off+imageChunk], was) {
			img.Chunks = append(img.Chunks, off/imageChunk)
		}
	}
	img.Data = make([]byte, 0, len(img.Chunks)*imageChunk)
	for _, c := range img.Chunks {
		img.Data = append(img.Data, buf[c*imageChunk:(c+1)*imageChunk]...)
	}
	files, err := imageFiles(k.staging, k.box.generated, k.box.guestIno)
	if err != nil {
		return nil, fmt.Errorf("suspending the kernel: %w", err)
	}
	img.Files = files
	if !end {
		return img, nil
	}
	// Gone without finalising: the interpreter lives on in the image.
	k.dead.Store(true)
	k.cancel()
	<-k.exited
	return img, nil
}

// imageFiles reads the files and dirs under dir but those of generated.
func imageFiles(dir string, generated map[string]bool, ino func(rel string) uint64) ([]ImageFile, error) {
	var out []ImageFile
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil || rel == "." {
			return err
		}
		rel = filepath.ToSlash(rel)
		if generated[rel] {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		f := ImageFile{Path: rel, Dir: d.IsDir(), Mode: fi.Mode().Perm(), MTime: fi.ModTime().UnixNano()}
		if ino != nil {
			f.Ino = ino(rel)
		}
		switch {
		case d.IsDir():
		case fi.Mode().IsRegular():
			if f.Data, err = os.ReadFile(path); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%w: its dir holds %s, which is not a regular file", ErrNotSuspendable, rel)
		}
		out = append(out, f)
		return nil
	})
	return out, err
}

// restoreFiles writes an image's files and dirs under dir, with their
// modes and times.
func restoreFiles(dir string, files []ImageFile) error {
	for _, f := range files {
		if !filepath.IsLocal(filepath.FromSlash(f.Path)) {
			return fmt.Errorf("%w: a file outside the private dir (%q)", ErrImageDamaged, f.Path)
		}
		path := filepath.Join(dir, filepath.FromSlash(f.Path))
		var err error
		if f.Dir {
			err = os.MkdirAll(path, 0o700)
		} else {
			err = os.WriteFile(path, f.Data, 0o600)
		}
		if err == nil {
			err = os.Chmod(path, f.Mode|0o600)
		}
		if err != nil {
			return fmt.Errorf("restoring the kernel's private dir: %w", err)
		}
	}
	// Times last: writing a file changes its dir's.
	for i := len(files) - 1; i >= 0; i-- {
		t := time.Unix(0, files[i].MTime)
		if err := os.Chtimes(filepath.Join(dir, filepath.FromSlash(files[i].Path)), t, t); err != nil {
			return fmt.Errorf("restoring the kernel's private dir: %w", err)
		}
	}
	return nil
}

// restore writes img's memory over mem, an instance's memory restored from
// the snapshot img was made against.
func (img *Image) restore(mem api.Memory) error {
	if cur := uint64(mem.Size()); cur < img.Size {
		if _, ok := mem.Grow(uint32((img.Size - cur) / wasmPage)); !ok {
			return fmt.Errorf("resuming the kernel: cannot grow its memory to %d MiB", img.Size>>20)
		}
	}
	buf, ok := mem.Read(0, uint32(img.Size))
	if !ok {
		return errors.New("resuming the kernel: memory read failed")
	}
	if uint64(len(img.Data)) != uint64(len(img.Chunks))*imageChunk {
		return ErrImageDamaged
	}
	for i, c := range img.Chunks {
		off := uint64(c) * imageChunk
		if off+imageChunk > img.Size {
			return ErrImageDamaged
		}
		copy(buf[off:off+imageChunk], img.Data[i*imageChunk:(i+1)*imageChunk])
	}
	return nil
}

// clockFrom is a monotonic clock that goes on from ns.
func clockFrom(ns int64) sys.Nanotime {
	start := time.Now()
	return func() int64 { return ns + int64(time.Since(start)) }
}

// The file: imageFormat, then an s2 stream (klauspost/compress: several
// times faster than zstd at its fastest level, for images about 1.6x
// larger: a suspension waits for it, the store only keeps it) of the
// Image but its Data as a gob, length first (uint32), then Data; then the
// CRC-32C of all before it (uint32). Little-endian. With small,
// imageFormatZstd and a zstd frame of the same (a store that pays for
// bytes more than for milliseconds). The checksum catches damage; an
// image is the session's own data, trusted as the store that holds it is
// (docs/service.md).
func (img *Image) marshal(small bool) ([]byte, error) {
	var head bytes.Buffer
	data := img.Data
	img.Data = nil
	err := gob.NewEncoder(&head).Encode(img)
	img.Data = data
	if err != nil {
		return nil, err
	}
	parts := [][]byte{binary.LittleEndian.AppendUint32(nil, uint32(head.Len())), head.Bytes(), data}
	var out bytes.Buffer
	if small {
		plain := bytes.Join(parts, nil)
		out.Grow(len(plain)/3 + 64)
		out.WriteString(imageFormatZstd)
		out.Write(zstdEncoder.EncodeAll(plain, nil))
		return binary.LittleEndian.AppendUint32(out.Bytes(), crc32.Checksum(out.Bytes(), castagnoli)), nil
	}
	out.Grow(len(data)/2 + head.Len() + 64)
	out.WriteString(imageFormat)
	zw := s2.NewWriter(&out, s2.WriterConcurrency(1))
	for _, part := range parts {
		if _, err := zw.Write(part); err != nil {
			return nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return binary.LittleEndian.AppendUint32(out.Bytes(), crc32.Checksum(out.Bytes(), castagnoli)), nil
}

func unmarshalImage(data []byte) (*Image, error) {
	body, ok := bytes.CutPrefix(data, []byte(imageFormat))
	if !ok {
		body, ok = bytes.CutPrefix(data, []byte(imageFormatV1))
	}
	small := false
	if !ok {
		body, ok = bytes.CutPrefix(data, []byte(imageFormatZstd))
		small = ok
	}
	if !ok {
		if bytes.HasPrefix(data, []byte("hermes-wasm-exec kernel image ")) {
			return nil, ErrImageStale
		}
		return nil, fmt.Errorf("%w: not a kernel image", ErrImageDamaged)
	}
	if len(body) < 4 {
		return nil, fmt.Errorf("%w: truncated", ErrImageDamaged)
	}
	n := len(data) - 4
	if crc32.Checksum(data[:n], castagnoli) != binary.LittleEndian.Uint32(data[n:]) {
		return nil, fmt.Errorf("%w: checksum mismatch", ErrImageDamaged)
	}
	var zr io.Reader = s2.NewReader(bytes.NewReader(body[:len(body)-4]))
	if small {
		plain, err := zstdDecoder.DecodeAll(body[:len(body)-4], nil)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrImageDamaged, err)
		}
		zr = bytes.NewReader(plain)
	}
	var size [4]byte
	if _, err := io.ReadFull(zr, size[:]); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrImageDamaged, err)
	}
	if binary.LittleEndian.Uint32(size[:]) > maxImageHead {
		return nil, fmt.Errorf("%w: header too large", ErrImageDamaged)
	}
	head := make([]byte, binary.LittleEndian.Uint32(size[:]))
	var img Image
	if _, err := io.ReadFull(zr, head); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrImageDamaged, err)
	}
	if err := gob.NewDecoder(bytes.NewReader(head)).Decode(&img); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrImageDamaged, err)
	}
	if uint64(len(img.Chunks))*imageChunk > img.Size || img.Size > maxImageMemory {
		return nil, fmt.Errorf("%w: chunks past its memory", ErrImageDamaged)
	}
	img.Data = make([]byte, len(img.Chunks)*imageChunk)
	if _, err := io.ReadFull(zr, img.Data); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrImageDamaged, err)
	}
	return &img, nil
}

// maxImageHead bounds an image's header (its files: a disk budget's
// worth), and maxImageMemory its memory (wazero's 4 GiB).
const (
	maxImageHead   = 1 << 31
	maxImageMemory = 4 << 30
)

// digest is the SHA-256 of the snapshot's image, computed once.
func (s *snapshot) digest() string {
	s.digestOnce.Do(func() {
		sum := sha256.Sum256(s.image)
		s.sum = hex.EncodeToString(sum[:])
	})
	return s.sum
}

// openFiles describes the descriptors fds (at offsets) that k holds open,
// for its image; ErrNotSuspendable for one that cannot be reopened: a
// directory (an iterator of os.scandir), or one whose path is not known
// (opened relative to a descriptor the host did not see opened).
func (k *strictKernel) openFiles(fds []int, offsets []int64) ([]OpenFile, error) {
	var out []OpenFile
	for i, fd := range fds {
		var rec fdRecord
		var path string
		ok := k.box.fds != nil
		if ok {
			rec, ok = k.box.fds.get(int32(fd))
		}
		if ok {
			path, ok = k.box.fds.guestPath(int32(fd), k.box.mounts)
		}
		if !ok || offsets[i] < 0 || rec.oflags&wasiOflagDirectory != 0 {
			return nil, fmt.Errorf("%w: it holds an open directory (an os.scandir iterator) or a descriptor it did not open by path (descriptor %d); close it to keep the kernel", ErrNotSuspendable, fd)
		}
		out = append(out, OpenFile{FD: int32(fd), Path: path, Offset: offsets[i],
			Read: rec.rights&wasiRightFDRead != 0, Write: rec.rights&wasiRightFDWrite != 0,
			Append: rec.fdflags&wasiFDFlagAppend != 0})
	}
	return out, nil
}

// reopenSpec is f as the kernel's reopen step takes it.
func (f OpenFile) reopenSpec() map[string]any {
	flags := "r"
	switch {
	case f.Append && f.Read:
		flags = "ra"
	case f.Append:
		flags = "a"
	case f.Read && f.Write:
		flags = "rw"
	case f.Write:
		flags = "w"
	}
	return map[string]any{"fd": f.FD, "path": f.Path, "flags": flags, "offset": f.Offset}
}

// guestIno is the inode number the guest sees for the file rel of the
// private dir (0 when it cannot be told).
func (box *sandbox) guestIno(rel string) uint64 {
	if len(box.jails) == 0 {
		return 0
	}
	j := box.jails[0]
	st, err := rootStat(j.root, rel, false)
	if err != nil {
		return 0
	}
	return j.guestIno(st.Ino)
}

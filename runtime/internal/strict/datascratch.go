package strict

import (
	"bytes"
	"encoding/binary"
	"os"
	"sync/atomic"
)

// wazero writes a module's data segments into every new instance's memory
// (3.4 MB for the interpreter), and for an instance restored from the
// snapshot that work is thrown away at once: restore maps the image over
// the whole memory. Written into fresh anonymous memory, the copy cost
// ~1.5 ms, most of it the kernel handing out and zeroing a page at each
// first touch (~1.4 µs a page on the 2-core VM). So the allocator of such
// an instance (instanceMemory.scratch) backs the part of the memory the
// data segments cover with a shared scratch mapping of pages already in
// memory (one per compiled module, its contents never read), populated up
// front: the copy is a plain memcpy (~0.4 ms). The scratch is shared by
// every instance in instantiation, concurrently; what they write there is
// the same bytes, and no instance runs on it: nothing of the guest runs
// during instantiation (startWith asks for no start functions, and a module
// with a start section gets no scratch), restore replaces the whole mapping
// with the image before the guest's first instruction, and an instance
// whose memory the image cannot be mapped over is not run (restore fails).
// Linux only (memfd; see snapshot_linux.go).

// scratchInstances counts the instances instantiated on a scratch (tests).
var scratchInstances atomic.Int64

// dataScratch is one compiled module's scratch: a memfd of size bytes (the
// data segments' extent, in whole wasm pages).
type dataScratch struct {
	f    *os.File
	size uint64
}

// scratchFor returns c's scratch, made on first use; nil when there is
// none (no data segments found, or no memfd).
func (c *compiled) scratchFor() *dataScratch {
	c.scratchOnce.Do(func() {
		if c.dataEnd > 0 {
			c.scratch = newDataScratch(c.dataEnd)
		}
	})
	return c.scratch
}

// closeScratch releases c's scratch, if it has one, and keeps it from
// making one (Engine.Close). A mapping of it made already stays valid;
// one tried later fails, and the instance commits plain memory instead.
func (c *compiled) closeScratch() {
	c.scratchOnce.Do(func() {})
	if c.scratch != nil {
		c.scratch.f.Close()
	}
}

// wasmDataEnd returns how far into memory 0 the active data segments of
// the wasm binary reach, rounded up to a wasm page: 0 when it cannot tell
// (a segment's offset is not a constant, or the binary does not parse),
// and 0 for a module with a start function, which wazero would run during
// instantiation, on the scratch.
func wasmDataEnd(wasm []byte) uint64 {
	if len(wasm) < 8 || !bytes.Equal(wasm[:4], []byte("\x00asm")) {
		return 0
	}
	r := wasm[8:]
	for len(r) > 0 {
		id := r[0]
		size, n := binary.Uvarint(r[1:])
		if n <= 0 || size > uint64(len(r)-1-n) {
			return 0
		}
		body := r[1+n : 1+n+int(size)]
		r = r[1+n+int(size):]
		switch id {
		case 8: // the start section
			return 0
		case 11: // the data section
			return dataSectionEnd(body)
		}
	}
	return 0
}

func dataSectionEnd(r []byte) uint64 {
	count, n := binary.Uvarint(r)
	if n <= 0 {
		return 0
	}
	r = r[n:]
	var end uint64
	for range count {
		flags, n := binary.Uvarint(r)
		if n <= 0 {
			return 0
		}
		r = r[n:]
		active := false
		switch flags {
		case 0: // active, memory 0
			active = true
		case 1: // passive: no offset
		default: // another memory, or an unknown form
			return 0
		}
		var offset uint64
		if active {
			// i32.const N, end
			if len(r) < 1 || r[0] != 0x41 {
				return 0
			}
			off, n2 := readSLEB(r[1:])
			if n2 <= 0 || len(r) < 2+n2 || r[1+n2] != 0x0b || off < 0 {
				return 0
			}
			offset = uint64(off)
			r = r[2+n2:]
		}
		size, n := binary.Uvarint(r)
		if n <= 0 || size > uint64(len(r)-n) {
			return 0
		}
		r = r[n+int(size):]
		if active {
			end = max(end, offset+size)
		}
	}
	return (end + wasmPage - 1) / wasmPage * wasmPage
}

// readSLEB reads a signed LEB128 value of up to 64 bits and returns it and
// the bytes it took (0: malformed).
func readSLEB(b []byte) (int64, int) {
	var v int64
	var shift uint
	for i, c := range b {
		if shift >= 64 {
			return 0, 0
		}
		v |= int64(c&0x7f) << shift
		shift += 7
		if c&0x80 == 0 {
			if shift < 64 && c&0x40 != 0 {
				v |= -1 << shift
			}
			return v, i + 1
		}
	}
	return 0, 0
}

package assetbuild

import (
	pyodideassets "github.com/hermes-agent/hermes-wasm-exec/pyodide-assets"

	"bytes"
	"fmt"
)

// wasmHeader is the magic "\0asm" followed by binary format version 1.
var wasmHeader = []byte{0x00, 'a', 's', 'm', 0x01, 0x00, 0x00, 0x00}

// stripCustomSections returns a copy of the WebAssembly binary module b
// without its custom sections (section id 0: DWARF debug information, the
// name section, producers and the like). The 8-byte header and every other
// section are copied byte for byte, in order, so the result is the same
// module minus metadata that the runtime never reads.
//
// The header must be the magic "\0asm" with version 1, and every section's
// declared size must fit in the input; a bad header, a truncated or
// over-long size, or a section running past the end of b is an error
// wrapping [pyodideassets.ErrCorrupt]. Section contents are not otherwise validated.
func stripCustomSections(b []byte) ([]byte, error) {
	if len(b) < len(wasmHeader) {
		return nil, fmt.Errorf("%w: wasm module is %d bytes, shorter than its 8-byte header", pyodideassets.ErrCorrupt, len(b))
	}
	if !bytes.Equal(b[:4], wasmHeader[:4]) {
		return nil, fmt.Errorf("%w: not a wasm module: bad magic % x", pyodideassets.ErrCorrupt, b[:4])
	}
	if !bytes.Equal(b[4:8], wasmHeader[4:8]) {
		return nil, fmt.Errorf("%w: unsupported wasm binary version % x, want 01 00 00 00", pyodideassets.ErrCorrupt, b[4:8])
	}
	out := make([]byte, 0, len(b))
	out = append(out, b[:8]...)
	off := 8
	for off < len(b) {
		start := off
		id := b[off]
		off++
		size, n, err := readVarU32(b[off:])
		if err != nil {
			return nil, fmt.Errorf("%w: wasm section (id %d) at offset %d: %v", pyodideassets.ErrCorrupt, id, start, err)
		}
		off += n
		if uint64(size) > uint64(len(b)-off) {
			return nil, fmt.Errorf("%w: wasm section (id %d) at offset %d declares %d payload bytes but only %d remain",
				pyodideassets.ErrCorrupt, id, start, size, len(b)-off)
		}
		off += int(size)
		if id != 0 {
			out = append(out, b[start:off]...)
		}
	}
	return out, nil
}

// readVarU32 decodes an unsigned LEB128 value of at most 32 bits from the
// start of b and returns it with the number of bytes it occupied.
func readVarU32(b []byte) (uint32, int, error) {
	var v uint32
	for i := 0; i < 5; i++ {
		if i >= len(b) {
			return 0, 0, fmt.Errorf("truncated section size")
		}
		c := b[i]
		if i == 4 && c&0xf0 != 0 {
			return 0, 0, fmt.Errorf("section size overflows 32 bits")
		}
		v |= uint32(c&0x7f) << (7 * i)
		if c&0x80 == 0 {
			return v, i + 1, nil
		}
	}
	// Unreachable: the fifth byte either has its high bit clear or fails the
	// overflow check above.
	return 0, 0, fmt.Errorf("section size overflows 32 bits")
}

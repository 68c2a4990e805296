package assetbuild

import (
	pyodideassets "github.com/hermes-agent/hermes-wasm-exec/pyodide-assets"

	"encoding/binary"
	"errors"
	"fmt"
)

// budgetGlobal is the name of the exported mutable i32 global that
// [addLoopChecks] adds: the loop iterations left before the next call to
// the host.
const budgetGlobal = "hermes_loop_budget"

// loopBudget is how many loop iterations a module rewritten by
// [addLoopChecks] runs between two calls to the host: about 20-200 µs of
// interpreter work, a negligible share of time in host calls.
const loopBudget = 1 << 14

// addLoopChecks returns a copy of the wasm module b in which every loop
// counts down [budgetGlobal] and, when it reaches zero, resets it to
// [loopBudget] and calls the WASI import sched_yield:
//
//	loop bt  ->  loop bt
//	             global.get $budget; i32.eqz
//	             if; i32.const LoopBudget; global.set $budget; call $sched_yield; drop; end
//	             global.get $budget; i32.const 1; i32.sub; global.set $budget
//
// The host answers sched_yield with the module's Osyield function, in Go:
// the engine uses it to stop a run whose context has ended (in Python's
// eval loop and in any C loop alike), and the call gives Go's scheduler and
// garbage collector the safe point that compiled wasm code never reaches by
// itself. wazero's own mechanism, WithCloseOnContextDone, calls into Go at
// every loop iteration instead, which made this interpreter 2.5-4x slower;
// a count-down costs a few instructions.
//
// It adds the global (and its export, which also marks the module as
// rewritten) and leaves everything else byte for byte. The module must
// import wasi_snapshot_preview1.sched_yield, must have no custom sections
// left that refer to code offsets (strip them first), and may use only the
// instruction set clang emits for wasm32 (MVP, sign extension, saturating
// conversions, bulk memory, reference types); anything else is an error
// wrapping [pyodideassets.ErrCorrupt].
func addLoopChecks(b []byte) ([]byte, error) {
	if len(b) < 8 || string(b[:8]) != string(wasmHeader) {
		return nil, fmt.Errorf("%w: not a wasm module", pyodideassets.ErrCorrupt)
	}
	type section struct {
		id   byte
		body []byte
	}
	var secs []section
	for off := 8; off < len(b); {
		id := b[off]
		size, n, err := readVarU32(b[off+1:])
		if err != nil || uint64(off+1+n)+uint64(size) > uint64(len(b)) {
			return nil, fmt.Errorf("%w: bad section at offset %d", pyodideassets.ErrCorrupt, off)
		}
		start := off + 1 + n
		secs = append(secs, section{id, b[start : start+int(size)]})
		off = start + int(size)
	}
	// The new global's index comes after every imported and defined global.
	var imports importInfo
	var definedGlobals uint32
	haveGlobal, haveExport := false, false
	for _, s := range secs {
		var err error
		switch s.id {
		case 2:
			imports, err = readImports(s.body, "wasi_snapshot_preview1", "sched_yield")
		case 6:
			definedGlobals, _, err = readVarU32(s.body)
			haveGlobal = true
		case 7:
			haveExport = true
			var has bool
			if has, err = exportsName(s.body, budgetGlobal); has {
				return nil, fmt.Errorf("%w: module already has loop checks (it exports %s)", pyodideassets.ErrCorrupt, budgetGlobal)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %v", pyodideassets.ErrCorrupt, err)
		}
	}
	if !haveGlobal || !haveExport {
		return nil, fmt.Errorf("%w: module has no global or export section", pyodideassets.ErrCorrupt)
	}
	if !imports.found {
		return nil, fmt.Errorf("%w: module does not import wasi_snapshot_preview1.sched_yield", pyodideassets.ErrCorrupt)
	}
	g := uleb(imports.globals + definedGlobals)
	budget := sleb(loopBudget)
	var check []byte
	check = append(append(append(check, 0x23), g...), 0x45, 0x04, 0x40) // global.get; i32.eqz; if
	check = append(append(append(check, 0x41), budget...), 0x24)        // i32.const N; global.set
	check = append(append(append(check, g...), 0x10), uleb(imports.fn)...)
	check = append(check, 0x1a, 0x0b)                                   // drop; end
	check = append(append(append(check, 0x23), g...), 0x41, 0x01, 0x6b) // global.get; i32.const 1; i32.sub
	check = append(append(check, 0x24), g...)                           // global.set

	out := append([]byte(nil), b[:8]...)
	for _, s := range secs {
		body := s.body
		var err error
		switch s.id {
		case 6: // global: one more, mutable i32 = LoopBudget
			entry := append(append([]byte{0x7f, 0x01, 0x41}, budget...), 0x0b)
			body, err = appendToVec(body, entry)
		case 7: // export the global
			e := append(uleb(uint32(len(budgetGlobal))), budgetGlobal...)
			e = append(append(e, 0x03), g...)
			body, err = appendToVec(body, e)
		case 10: // code
			body, err = rewriteLoopBodies(body, check)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %v", pyodideassets.ErrCorrupt, err)
		}
		out = append(out, s.id)
		out = append(out, uleb(uint32(len(body)))...)
		out = append(out, body...)
	}
	return out, nil
}

func uleb(v uint32) []byte { return binary.AppendUvarint(nil, uint64(v)) }

// sleb encodes v as a signed LEB128, as i32.const wants.
func sleb(v int32) []byte {
	var out []byte
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(out, c)
		}
		out = append(out, c|0x80)
	}
}

// appendToVec adds one entry to a section that is a vector.
func appendToVec(body, entry []byte) ([]byte, error) {
	n, k, err := readVarU32(body)
	if err != nil {
		return nil, err
	}
	out := append(uleb(n+1), body[k:]...)
	return append(out, entry...), nil
}

// reader walks a section's bytes.
type reader struct {
	b   []byte
	off int
	err error
}

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf(format, args...)
	}
}

func (r *reader) byte() byte {
	if r.off >= len(r.b) {
		r.fail("unexpected end at offset %d", r.off)
		return 0
	}
	c := r.b[r.off]
	r.off++
	return c
}

func (r *reader) u32() uint32 {
	v, n, err := readVarU32(r.b[min(r.off, len(r.b)):])
	if err != nil {
		r.fail("bad LEB128 at offset %d", r.off)
	}
	r.off += n
	return v
}

// skipLEB skips a signed or unsigned LEB128 of up to 10 bytes.
func (r *reader) skipLEB() {
	for i := 0; i < 10; i++ {
		if r.byte()&0x80 == 0 {
			return
		}
	}
	r.fail("LEB128 too long at offset %d", r.off)
}

func (r *reader) skip(n int) {
	if r.off+n > len(r.b) {
		r.fail("unexpected end at offset %d", r.off)
	}
	r.off += n
}

// exportsName reports whether an export section exports name.
func exportsName(body []byte, name string) (bool, error) {
	r := &reader{b: body}
	for n := r.u32(); n > 0 && r.err == nil; n-- {
		if r.name() == name && r.err == nil {
			return true, nil
		}
		r.byte() // kind
		r.u32()  // index
	}
	return false, r.err
}

// importInfo is what AddLoopChecks needs from the import section.
type importInfo struct {
	globals uint32 // imported globals
	fn      uint32 // function index of the wanted import
	found   bool
}

// readImports counts the imported globals and finds the function index of
// the function import module.name.
func readImports(body []byte, module, name string) (importInfo, error) {
	r := &reader{b: body}
	var info importInfo
	var funcs uint32
	for n := r.u32(); n > 0 && r.err == nil; n-- {
		mod := r.name()
		field := r.name()
		switch kind := r.byte(); kind {
		case 0: // func: type index
			r.u32()
			if mod == module && field == name && !info.found {
				info.fn, info.found = funcs, true
			}
			funcs++
		case 1: // table: reftype, limits
			r.byte()
			r.skipLimits()
		case 2: // memory: limits
			r.skipLimits()
		case 3: // global: valtype, mutability
			r.byte()
			r.byte()
			info.globals++
		default:
			r.fail("unknown import kind %d", kind)
		}
	}
	return info, r.err
}

// name reads a length-prefixed name.
func (r *reader) name() string {
	size := int(r.u32())
	start := r.off
	r.skip(size)
	if r.err != nil {
		return ""
	}
	return string(r.b[start:r.off])
}

func (r *reader) skipLimits() {
	flags := r.byte()
	r.u32()
	if flags&1 != 0 {
		r.u32()
	}
}

// rewriteLoopBodies rewrites the code section, inserting check after the
// block type of every loop instruction.
func rewriteLoopBodies(body, check []byte) ([]byte, error) {
	r := &reader{b: body}
	count := r.u32()
	out := uleb(count)
	for i := uint32(0); i < count && r.err == nil; i++ {
		size := int(r.u32())
		start := r.off
		r.skip(size)
		if r.err != nil {
			break
		}
		fn, err := addLoopChecksToFunc(body[start:start+size], check)
		if err != nil {
			return nil, fmt.Errorf("function %d: %w", i, err)
		}
		out = append(out, uleb(uint32(len(fn)))...)
		out = append(out, fn...)
	}
	if r.err == nil && r.off != len(body) {
		r.fail("code section has %d trailing bytes", len(body)-r.off)
	}
	return out, r.err
}

func addLoopChecksToFunc(fn, check []byte) ([]byte, error) {
	r := &reader{b: fn}
	for n := r.u32(); n > 0 && r.err == nil; n-- { // locals: count, valtype
		r.u32()
		r.byte()
	}
	out := make([]byte, 0, len(fn)+len(fn)/16)
	out = append(out, fn[:r.off]...)
	last := r.off
	for r.off < len(fn) && r.err == nil {
		op := r.byte()
		switch {
		case op == 0x02 || op == 0x03 || op == 0x04: // block, loop, if: blocktype
			r.skipLEB() // 0x40, a valtype (one byte) or an s33 type index
			if op == 0x03 {
				out = append(out, fn[last:r.off]...)
				out = append(out, check...)
				last = r.off
			}
		case op == 0x0c || op == 0x0d || op == 0x10 || (op >= 0x20 && op <= 0x26) || op == 0xd2:
			r.u32() // br, br_if, call, local/global/table get/set/tee, ref.func
		case op == 0x0e: // br_table
			for n := r.u32(); n > 0 && r.err == nil; n-- {
				r.u32()
			}
			r.u32()
		case op == 0x11: // call_indirect: type, table
			r.u32()
			r.u32()
		case op == 0x1c: // select t*
			for n := r.u32(); n > 0 && r.err == nil; n-- {
				r.byte()
			}
		case op >= 0x28 && op <= 0x3e: // loads and stores: memarg
			r.u32()
			r.u32()
		case op == 0x3f || op == 0x40: // memory.size, memory.grow
			r.byte()
		case op == 0x41 || op == 0x42: // i32.const, i64.const
			r.skipLEB()
		case op == 0x43:
			r.skip(4)
		case op == 0x44:
			r.skip(8)
		case op == 0xd0: // ref.null t
			r.byte()
		case op == 0xfc:
			skipPrefixed(r)
		case op <= 0x01 || op == 0x05 || op == 0x0b || op == 0x0f || op == 0x1a || op == 0x1b ||
			(op >= 0x45 && op <= 0xc4) || op == 0xd1:
			// no immediates
		default:
			r.fail("unsupported opcode 0x%02x at offset %d", op, r.off-1)
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	if len(fn) == 0 || fn[len(fn)-1] != 0x0b {
		return nil, errors.New("function body does not end with end")
	}
	return append(out, fn[last:]...), nil
}

// skipPrefixed skips the sub-opcode and immediates of a 0xfc instruction.
func skipPrefixed(r *reader) {
	switch sub := r.u32(); {
	case sub <= 7: // saturating truncations
	case sub == 8: // memory.init: data index, memory
		r.u32()
		r.byte()
	case sub == 9 || sub == 13 || (sub >= 15 && sub <= 17): // data.drop, elem.drop, table.grow/size/fill
		r.u32()
	case sub == 10: // memory.copy: two memories
		r.byte()
		r.byte()
	case sub == 11: // memory.fill
		r.byte()
	case sub == 12 || sub == 14: // table.init, table.copy
		r.u32()
		r.u32()
	default:
		r.fail("unsupported opcode 0xfc %d at offset %d", sub, r.off)
	}
}

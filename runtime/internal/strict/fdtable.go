package strict

import (
	"context"
	"encoding/json"
	"path"
	"sync"
	"sync/atomic"

	"github.com/tetratelabs/wazero/api"
)

// A suspended kernel keeps its open files (an open file object, an sqlite3
// connection): wazero's descriptor table is out of reach, so the host
// follows it instead, from the guest's WASI calls (path_open, fd_close,
// fd_renumber), and a suspension records each open descriptor's path, mode
// and offset (OpenFile). A resumed kernel, before its first cell, reopens
// each and moves it to its old number (fd_renumber, asked through the tool
// channel: renumberOp), so the Python objects holding those numbers go on
// reading and writing where they were.

// fdRecord is what path_open was asked for a descriptor.
type fdRecord struct {
	dirFD   int32  // the descriptor path is relative to
	path    string // as the guest gave it
	oflags  uint32 // WASI oflags (O_CREAT, O_DIRECTORY, ...)
	rights  uint64 // WASI rights base
	fdflags uint32 // WASI fdflags (APPEND, ...)
}

// WASI preview 1 constants used here.
const (
	wasiOflagDirectory = 1 << 1
	wasiRightFDRead    = 1 << 1
	wasiRightFDWrite   = 1 << 6
	wasiFDFlagAppend   = 1 << 0
)

// fdTable follows one instance's descriptors that path_open made.
type fdTable struct {
	mu  sync.Mutex
	fds map[int32]fdRecord
}

type fdTableKey struct{}

// withFDTable returns ctx carrying t, for the WASI wrappers.
func withFDTable(ctx context.Context, t *fdTable) context.Context {
	return context.WithValue(ctx, fdTableKey{}, t)
}

func fdTableOf(ctx context.Context) *fdTable {
	t, _ := ctx.Value(fdTableKey{}).(*fdTable)
	return t
}

func (t *fdTable) get(fd int32) (fdRecord, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	r, ok := t.fds[fd]
	return r, ok
}

// guestPath is the guest's absolute path of the file fd was opened at,
// with mounts the guest paths of the preopened descriptors from 3 up; ok
// is false when it cannot be told (a descriptor opened relative to one
// the table does not know).
func (t *fdTable) guestPath(fd int32, mounts []string) (string, bool) {
	var parts []string // from fd up to a preopened dir
	for range 64 {
		r, ok := t.get(fd)
		if !ok {
			return "", false
		}
		parts = append(parts, r.path)
		if i := int(r.dirFD) - 3; i >= 0 && i < len(mounts) {
			p := mounts[i]
			for j := len(parts) - 1; j >= 0; j-- {
				p = path.Join(p, parts[j])
			}
			return p, true
		}
		fd = r.dirFD
	}
	return "", false
}

// trackPathOpen wraps path_open: a descriptor it opens is recorded with
// what it was opened at.
func trackPathOpen(fn api.GoModuleFunction) api.GoModuleFunction {
	return api.GoModuleFunc(func(ctx context.Context, mod api.Module, stack []uint64) {
		t := fdTableOf(ctx)
		if t == nil {
			fn.Call(ctx, mod, stack)
			return
		}
		// (fd, dirflags, path, path_len, oflags, rights_base,
		// rights_inheriting, fdflags, result.opened_fd) -> errno
		rec := fdRecord{dirFD: int32(stack[0]), oflags: uint32(stack[4]), rights: stack[5], fdflags: uint32(stack[7])}
		p, ok := mod.Memory().Read(uint32(stack[2]), uint32(stack[3]))
		if ok {
			rec.path = string(p)
		}
		resultPtr := uint32(stack[8])
		fn.Call(ctx, mod, stack)
		if stack[0] != 0 || !ok {
			return
		}
		if fd, ok := mod.Memory().ReadUint32Le(resultPtr); ok {
			t.mu.Lock()
			if t.fds == nil {
				t.fds = map[int32]fdRecord{}
			}
			t.fds[int32(fd)] = rec
			t.mu.Unlock()
		}
	})
}

// trackClose wraps fd_close.
func trackClose(fn api.GoModuleFunction) api.GoModuleFunction {
	return api.GoModuleFunc(func(ctx context.Context, mod api.Module, stack []uint64) {
		fd := int32(stack[0])
		fn.Call(ctx, mod, stack)
		if t := fdTableOf(ctx); t != nil && stack[0] == 0 {
			t.mu.Lock()
			delete(t.fds, fd)
			t.mu.Unlock()
		}
	})
}

// trackRenumber wraps fd_renumber: the record moves with the descriptor,
// over whatever was at its new number.
func trackRenumber(fn api.GoModuleFunction) api.GoModuleFunction {
	return api.GoModuleFunc(func(ctx context.Context, mod api.Module, stack []uint64) {
		from, to := int32(stack[0]), int32(stack[1])
		fn.Call(ctx, mod, stack)
		if t := fdTableOf(ctx); t != nil && stack[0] == 0 {
			t.mu.Lock()
			r, ok := t.fds[from]
			delete(t.fds, from)
			delete(t.fds, to)
			if ok {
				t.fds[to] = r
			}
			t.mu.Unlock()
		}
	})
}

// wasiRenumber is wazero's fd_renumber as instantiateWASI wrapped it: a
// resumed kernel's reopen step moves each reopened descriptor to its old
// number with it (renumberOp).
var wasiRenumber atomic.Pointer[api.GoModuleFunction]

// renumberPrefix begins the tool channel's request to renumber a
// descriptor, {"op":"renumber","from":N,"to":M}: hostCall answers it
// itself, with {"errno":E}, in the guest's own descriptor table, and only
// while a resumed kernel reopens its files (reopenWindow): the
// interpreter imports no fd_renumber, and wazero grows the host's
// descriptor table to the number asked for (a script asking for 2^31 had
// the host allocate 16 GiB).
const renumberPrefix = `{"op":"renumber",`

// reopenWindow is what a reopen step may renumber: a descriptor from
// first up, opened by path (in the table), to one the image recorded,
// each once.
type reopenWindow struct {
	first int32
	to    map[int32]bool
}

// renumberOp answers a renumber request of the guest mod, within w (nil:
// no reopen runs, and it is refused).
func renumberOp(ctx context.Context, mod api.Module, req []byte, w *reopenWindow) []byte {
	var r struct {
		From, To int32
	}
	fn := wasiRenumber.Load()
	if json.Unmarshal(req, &r) != nil || fn == nil {
		return []byte(`{"errno":28}` + "\n") // EINVAL
	}
	if w == nil || !w.to[r.To] || r.From < w.first || r.From == r.To {
		return []byte(`{"errno":63}` + "\n") // EPERM
	}
	if t := fdTableOf(ctx); t == nil {
		return []byte(`{"errno":63}` + "\n")
	} else if _, ok := t.get(r.From); !ok {
		return []byte(`{"errno":63}` + "\n")
	}
	delete(w.to, r.To)
	stack := []uint64{uint64(uint32(r.From)), uint64(uint32(r.To))}
	(*fn).Call(ctx, mod, stack)
	out, _ := json.Marshal(map[string]uint64{"errno": stack[0]})
	return append(out, '\n')
}

// OpenFile is a descriptor a suspended kernel held open.
type OpenFile struct {
	FD     int32
	Path   string // the guest's absolute path
	Read   bool
	Write  bool
	Append bool
	Offset int64
}

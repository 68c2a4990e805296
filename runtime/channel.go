package runtime

import (
	"bytes"
	"context"
	"io/fs"
	"sync"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/sys"
)

// Guest paths of the tool channel.
const (
	channelMount = "/.hermes"
	channelFile  = "call"
	// ChannelPath is where the guest's hermes_tools module sends requests.
	ChannelPath = channelMount + "/" + channelFile
)

// maxRequest bounds one request line from the guest.
const maxRequest = 64 << 20

// channelFS is the tool channel: a one-file file system mounted at
// /.hermes. The guest writes a JSON request line to /.hermes/call; the
// write returns once the host has run the tool (synchronously, on the
// guest's own goroutine), and the guest then reads the response line until
// end of file. The published interpreter imports only
// wasi_snapshot_preview1, so a file is the one door Python can knock on.
//
// serve answers one request line (without its newline) with a response
// line: a one-shot run's broker (Broker.Serve), or a kernel's dispatcher,
// which also hands out cells.
type channelFS struct {
	experimentalsys.UnimplementedFS
	ctx   context.Context
	serve func(ctx context.Context, line []byte) []byte
}

// OpenFile implements experimentalsys.FS.
func (c *channelFS) OpenFile(p string, flag experimentalsys.Oflag, _ fs.FileMode) (experimentalsys.File, experimentalsys.Errno) {
	switch clean(p) {
	case ".":
		return &channelDir{}, 0
	case channelFile:
		if flag&experimentalsys.O_DIRECTORY != 0 {
			return nil, experimentalsys.ENOTDIR
		}
		return &callFile{fs: c}, 0
	}
	if flag&experimentalsys.O_CREAT != 0 {
		return nil, experimentalsys.EROFS
	}
	return nil, experimentalsys.ENOENT
}

// Stat implements experimentalsys.FS.
func (c *channelFS) Stat(p string) (sys.Stat_t, experimentalsys.Errno) {
	switch clean(p) {
	case ".":
		return sys.Stat_t{Mode: fs.ModeDir | 0o500, Nlink: 1}, 0
	case channelFile:
		return sys.Stat_t{Mode: 0o600, Nlink: 1}, 0
	}
	return sys.Stat_t{}, experimentalsys.ENOENT
}

// Lstat implements experimentalsys.FS.
func (c *channelFS) Lstat(p string) (sys.Stat_t, experimentalsys.Errno) { return c.Stat(p) }

// channelDir is the channel mount's root directory.
type channelDir struct {
	experimentalsys.UnimplementedFile
}

func (channelDir) IsDir() (bool, experimentalsys.Errno) { return true, 0 }

func (channelDir) Stat() (sys.Stat_t, experimentalsys.Errno) {
	return sys.Stat_t{Mode: fs.ModeDir | 0o500, Nlink: 1}, 0
}

func (channelDir) Readdir(int) ([]experimentalsys.Dirent, experimentalsys.Errno) {
	return []experimentalsys.Dirent{{Name: channelFile}}, 0
}

// callFile is one open descriptor of the channel: requests in, responses
// out.
type callFile struct {
	experimentalsys.UnimplementedFile
	fs *channelFS

	mu   sync.Mutex
	req  []byte
	resp []byte
}

func (f *callFile) Stat() (sys.Stat_t, experimentalsys.Errno) {
	return sys.Stat_t{Mode: 0o600, Nlink: 1}, 0
}

// Write buffers request bytes and serves every complete line at once.
func (f *callFile) Write(buf []byte) (int, experimentalsys.Errno) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.req)+len(buf) > maxRequest {
		f.req = nil
		f.resp = append(f.resp, `{"error": "Tool request too large (over 64 MiB)."}`+"\n"...)
		return len(buf), 0
	}
	f.req = append(f.req, buf...)
	for {
		i := bytes.IndexByte(f.req, '\n')
		if i < 0 {
			break
		}
		line := f.req[:i]
		f.resp = append(f.resp, f.fs.serve(f.fs.ctx, line)...)
		f.req = f.req[i+1:]
	}
	return len(buf), 0
}

// Read hands out the pending response; 0 bytes (end of file) once it has
// all been read.
func (f *callFile) Read(buf []byte) (int, experimentalsys.Errno) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := copy(buf, f.resp)
	f.resp = f.resp[n:]
	if len(f.resp) == 0 {
		f.resp = nil
	}
	return n, 0
}

package backend

import (
	"bufio"
	"context"
	_ "embed"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The file system of a remote backend is served by an agent: one
// long-lived process in the target reading requests from its stdin, one
// line each, and answering one line each, so a file operation costs a
// round trip over an open stream, not a new docker exec or ssh command.
// Where the target has python3 the agent is agent.py, which forks nothing;
// otherwise agentScript, a POSIX shell that needs only coreutils (stat,
// base64, head, mktemp, mv, readlink) and find, no Python. Requests: an operation letter and base64
// arguments; answers: "ok ..." or "err <base64 message>". The messages are
// the tools' own (LC_ALL=C), mapped to fs errors by their text.

// agentScript is the agent, run as sh -c. A request is a line "OP ARGS"
// then a line with the path, raw (or base64 when OP ends in "64", for a
// path holding a newline); a write's data follows as one base64 line.
// Answers are printed by the one program an operation runs where possible
// (stat prints "ok ..." itself), so most operations fork once or twice.
const agentScript = `export LC_ALL=C
E=$(mktemp) || exit 1
trap 'rm -f "$E"' EXIT
d() { printf %s "$1" | base64 -d; printf x; }
fail() { printf 'err %s\n' "$(base64 -w0 < "$E")"; }
nofile() { if [ ! -e "$1" ] && [ ! -L "$1" ]; then echo "$1: No such file or directory" > "$E"; return 0; fi; return 1; }
while IFS=' ' read -r op a b && IFS= read -r p; do
  case $op in *64) p=$(d "$p"); p=${p%x}; op=${op%64};; esac
  case $op in
  S) if [ ! -e "$p" ]; then nofile "$p" || echo "$p: No such file or directory" > "$E"; fail
     else stat -L -c 'ok %f %s %Y %h %d %i' -- "$p" 2>"$E" || fail; fi ;;
  L) if nofile "$p"; then fail; else stat -c 'ok %f %s %Y %h %d %i' -- "$p" 2>"$E" || fail; fi ;;
  K) if o=$(readlink -- "$p" 2>"$E"); then printf 'ok %s\n' "$(printf %s "$o" | base64 -w0)"
     else [ -s "$E" ] || echo "$p: Invalid argument" > "$E"; fail; fi ;;
  R) if [ -d "$p" ]; then echo "$p: Is a directory" > "$E"; fail
     elif [ -f "$p" ] && [ -r "$p" ]; then printf 'ok '; head -c "$a" -- "$p" | base64 -w0; echo
     elif nofile "$p"; then fail
     else cat -- "$p" 2>"$E" >/dev/null; [ -s "$E" ] || echo "$p: Permission denied" > "$E"; fail; fi ;;
  D) if cd -- "$p" 2>"$E"; then
       printf 'ok %s\n' "$(find . -mindepth 1 -maxdepth 1 -exec stat --printf '%f %s %Y %h %d %i %n\0' -- {} + 2>/dev/null | base64 -w0)"; cd /
     else fail; fi ;;
  M) if mkdir -p -m "$a" -- "$p" 2>"$E"; then echo ok; else fail; fi ;;
  W) IFS= read -r data
     t=$(d "$a"); t=${t%x}
     if f=$(mktemp -- "$p/$t" 2>"$E"); then
       if printf %s "$data" | base64 -d > "$f" 2>"$E" && chmod -- "$b" "$f" 2>"$E"; then
         printf 'ok %s\n' "$(printf %s "$f" | base64 -w0)"
       else fail; rm -f -- "$f"; fi
     else fail; fi ;;
  N) q=$(d "$a"); q=${q%x}
     if mv -f -- "$p" "$q" 2>"$E"; then echo ok; else fail; fi ;;
  X) if [ -d "$p" ] && [ ! -L "$p" ]; then r=rmdir; else r=rm; fi
     if $r -- "$p" 2>"$E"; then echo ok; else fail; fi ;;
  *) echo "unknown operation $op" > "$E"; fail ;;
  esac
done`

// maxRemoteRead bounds a file read over a remote backend (the whole file
// travels as one line).
const maxRemoteRead = 64 << 20

// agentTimeout bounds one operation.
const agentTimeout = 60 * time.Second

// agent is a running file agent.
type agent struct {
	p   Process
	in  io.WriteCloser
	out *bufio.Reader
	pw  *io.PipeWriter
}

func (a *agent) close() {
	a.in.Close()
	a.pw.Close()
	done := make(chan struct{})
	go func() { a.p.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		a.p.Stop(time.Second)
	}
}

// agentPython is the agent for targets with python3: the same protocol,
// no fork per operation.
//
//go:embed agent.py
var agentPython string

// startAgent starts the agent on r.
func (r *remote) startAgent() (*agent, error) {
	pr, pw := io.Pipe()
	argv := []string{"sh", "-c", agentScript}
	if r.pythonAgent {
		argv = []string{"python3", "-S", "-c", agentPython}
	}
	p, err := r.Start(context.Background(), Command{Argv: argv, Dir: "/", Interactive: true, Stdout: pw})
	if err != nil {
		pw.Close()
		return nil, err
	}
	go func() { p.Wait(); pw.CloseWithError(errAgentGone) }()
	return &agent{p: p, in: p.Stdin(), out: bufio.NewReaderSize(pr, 64<<10), pw: pw}, nil
}

var errAgentGone = errors.New("the file agent ended")

// call sends one request about name and returns the answer's fields after
// "ok". payload, when not nil, follows the request as a base64 line.
func (r *remote) call(op, name string, args []string, payload []byte) (string, error) {
	r.agentMu.Lock()
	defer r.agentMu.Unlock()
	if r.closed {
		return "", fmt.Errorf("the %s backend is closed", r.name)
	}
	var req strings.Builder
	req.WriteString(op)
	if strings.ContainsAny(name, "\n\r") {
		req.WriteString("64")
	}
	for _, a := range args {
		req.WriteString(" ")
		req.WriteString(a)
	}
	req.WriteString("\n")
	if strings.ContainsAny(name, "\n\r") {
		req.WriteString(b64(name))
	} else {
		req.WriteString(name)
	}
	req.WriteString("\n")
	if payload != nil {
		req.WriteString(base64.StdEncoding.EncodeToString(payload))
		req.WriteString("\n")
	}
	for attempt := 0; ; attempt++ {
		if r.agent == nil {
			if r.agentFailed {
				// The last agent died: the target may be gone (a removed
				// or stopped container); bring it back first.
				if _, err := r.Revive(context.Background()); err != nil {
					return "", err
				}
			}
			a, err := r.startAgent()
			if err != nil {
				return "", err
			}
			r.agent, r.agentFailed = a, false
		}
		line, err := r.agent.roundTrip(req.String())
		if err == nil {
			return line, nil
		}
		// The agent died (a restarted container, a dropped connection).
		r.agent.close()
		r.agent, r.agentFailed = nil, true
		// A read is tried again with a new agent, once; a write, rename or
		// remove is not: it may have happened before the answer was lost.
		if attempt > 0 || !idempotentOps[op] {
			return "", fmt.Errorf("the %s backend's file agent failed: %w", r.name, err)
		}
	}
}

// idempotentOps are the agent operations that may be repeated.
var idempotentOps = map[string]bool{"S": true, "L": true, "K": true, "R": true, "D": true, "M": true}

func (a *agent) roundTrip(req string) (string, error) {
	type answer struct {
		line string
		err  error
	}
	ch := make(chan answer, 1)
	go func() {
		if _, err := io.WriteString(a.in, req); err != nil {
			ch <- answer{err: err}
			return
		}
		line, err := a.out.ReadString('\n')
		ch <- answer{line, err}
	}()
	t := time.NewTimer(agentTimeout)
	defer t.Stop()
	select {
	case ans := <-ch:
		return strings.TrimSuffix(ans.line, "\n"), ans.err
	case <-t.C:
		a.p.Stop(time.Second)
		return "", fmt.Errorf("no answer in %s", agentTimeout)
	}
}

// remoteFS is a remote backend's FS.
type remoteFS struct{ r *remote }

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// do runs op on name and returns what follows "ok".
func (f remoteFS) do(opName, name string, op string, args []string, payload []byte) (string, error) {
	if strings.IndexByte(name, 0) >= 0 {
		// As package os: the sh agent's read would drop the byte and act
		// on another path.
		return "", &fs.PathError{Op: opName, Path: name, Err: syscall.EINVAL}
	}
	line, err := f.r.call(op, name, args, payload)
	if err != nil {
		return "", &fs.PathError{Op: opName, Path: name, Err: err}
	}
	if rest, ok := strings.CutPrefix(line, "ok"); ok {
		return strings.TrimPrefix(rest, " "), nil
	}
	msg, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(line, "err "))
	return "", &fs.PathError{Op: opName, Path: name, Err: remoteErr(strings.TrimSpace(string(msg)))}
}

// remoteErr maps a tool's error message to the error os would return.
func remoteErr(msg string) error {
	for _, m := range []struct {
		text string
		err  error
	}{
		{"No such file or directory", syscall.ENOENT},
		{"Permission denied", syscall.EACCES},
		{"Operation not permitted", syscall.EPERM},
		{"File exists", syscall.EEXIST},
		{"Is a directory", syscall.EISDIR},
		{"Not a directory", syscall.ENOTDIR},
		{"Directory not empty", syscall.ENOTEMPTY},
		{"Invalid argument", syscall.EINVAL},
		{"File too large", syscall.EFBIG},
		{"Too many levels of symbolic links", syscall.ELOOP},
		{"Read-only file system", syscall.EROFS},
		{"No space left on device", syscall.ENOSPC},
	} {
		if strings.Contains(msg, m.text) {
			return m.err
		}
	}
	if msg == "" {
		msg = "failed"
	}
	return errors.New(msg)
}

func (f remoteFS) stat(op, letter, name string) (fs.FileInfo, error) {
	out, err := f.do(op, name, letter, nil, nil)
	if err != nil {
		return nil, err
	}
	fi, err := parseStat(out, path.Base(name))
	if err != nil {
		return nil, &fs.PathError{Op: op, Path: name, Err: err}
	}
	return fi, nil
}

func (f remoteFS) Stat(name string) (fs.FileInfo, error)  { return f.stat("stat", "S", name) }
func (f remoteFS) Lstat(name string) (fs.FileInfo, error) { return f.stat("lstat", "L", name) }

// FileID is what Stat tells: every stat answer carries the identity.
func (f remoteFS) FileID(name string) (FileID, error) {
	fi, err := f.Stat(name)
	if err != nil {
		return FileID{}, err
	}
	id, _ := IDOf(fi)
	return id, nil
}

func (f remoteFS) Readlink(name string) (string, error) {
	out, err := f.do("readlink", name, "K", nil, nil)
	if err != nil {
		return "", err
	}
	dest, err := base64.StdEncoding.DecodeString(out)
	return string(dest), err
}

func (f remoteFS) ReadDir(name string) ([]fs.DirEntry, error) {
	out, err := f.do("readdirent", name, "D", nil, nil)
	if err != nil {
		return nil, err
	}
	raw, err := base64.StdEncoding.DecodeString(out)
	if err != nil {
		return nil, &fs.PathError{Op: "readdirent", Path: name, Err: err}
	}
	var entries []fs.DirEntry
	for _, rec := range strings.Split(string(raw), "\x00") {
		if rec == "" {
			continue
		}
		fields := strings.SplitN(rec, " ", statFields+1)
		if len(fields) != statFields+1 {
			continue
		}
		fi, err := parseStat(strings.Join(fields[:statFields], " "), strings.TrimPrefix(fields[statFields], "./"))
		if err != nil {
			continue
		}
		entries = append(entries, fs.FileInfoToDirEntry(fi))
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	return entries, nil
}

func (f remoteFS) ReadFile(name string) ([]byte, error) {
	out, err := f.do("open", name, "R", []string{strconv.Itoa(maxRemoteRead + 1)}, nil)
	if err != nil {
		return nil, err
	}
	data, err := base64.StdEncoding.DecodeString(out)
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: name, Err: err}
	}
	if len(data) > maxRemoteRead {
		return nil, &fs.PathError{Op: "read", Path: name, Err: fmt.Errorf("larger than %d MB, the most a %s backend reads at once: %w", maxRemoteRead>>20, f.r.name, syscall.EFBIG)}
	}
	return data, nil
}

func (f remoteFS) Open(name string) (io.ReadCloser, error) {
	data, err := f.ReadFile(name)
	if err != nil {
		return nil, err
	}
	return io.NopCloser(strings.NewReader(string(data))), nil
}

func (f remoteFS) MkdirAll(name string, perm fs.FileMode) error {
	_, err := f.do("mkdir", name, "M", []string{strconv.FormatUint(uint64(perm.Perm()), 8)}, nil)
	return err
}

func (f remoteFS) WriteTemp(dir, pattern string, data []byte, perm fs.FileMode) (string, error) {
	prefix, suffix := pattern, ""
	if i := strings.LastIndex(pattern, "*"); i >= 0 {
		prefix, suffix = pattern[:i], pattern[i+1:]
	}
	if strings.IndexByte(prefix, 0) >= 0 {
		return "", &fs.PathError{Op: "createtemp", Path: pattern, Err: syscall.EINVAL}
	}
	if suffix != "" || strings.Contains(prefix, "/") {
		return "", &fs.PathError{Op: "createtemp", Path: pattern, Err: errors.New("pattern must end with * and contain no /")}
	}
	out, err := f.do("createtemp", dir, "W", []string{b64(prefix + "XXXXXXXXXX"), strconv.FormatUint(uint64(perm&(fs.ModePerm)), 8)}, data)
	if err != nil {
		return "", err
	}
	name, err := base64.StdEncoding.DecodeString(out)
	return string(name), err
}

func (f remoteFS) Rename(oldname, newname string) error {
	if strings.IndexByte(newname, 0) >= 0 {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: syscall.EINVAL}
	}
	_, err := f.do("rename", oldname, "N", []string{b64(newname)}, nil)
	if err != nil {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: errors.Unwrap(err)}
	}
	return nil
}

func (f remoteFS) Remove(name string) error {
	_, err := f.do("remove", name, "X", nil, nil)
	return err
}

// remoteInfo is what the agent reports of a file.
type remoteInfo struct {
	name    string
	size    int64
	mode    fs.FileMode
	modTime time.Time
	id      FileID
}

func (i *remoteInfo) Name() string       { return i.name }
func (i *remoteInfo) Size() int64        { return i.size }
func (i *remoteInfo) Mode() fs.FileMode  { return i.mode }
func (i *remoteInfo) ModTime() time.Time { return i.modTime }
func (i *remoteInfo) IsDir() bool        { return i.mode.IsDir() }

// Sys is the file's identity, a *FileID (see IDOf).
func (i *remoteInfo) Sys() any { return &i.id }

// statFields is the number of fields of a stat answer.
const statFields = 6

// parseStat parses "rawmode-hex size mtime links dev inode" as
// stat -c '%f %s %Y %h %d %i' prints it.
func parseStat(s, name string) (fs.FileInfo, error) {
	f := strings.Fields(s)
	if len(f) != statFields {
		return nil, fmt.Errorf("unexpected stat answer %q", s)
	}
	raw, err1 := strconv.ParseUint(f[0], 16, 32)
	size, err2 := strconv.ParseInt(f[1], 10, 64)
	mtime, err3 := strconv.ParseInt(f[2], 10, 64)
	nlink, err4 := strconv.ParseUint(f[3], 10, 64)
	dev, err5 := strconv.ParseUint(f[4], 10, 64)
	ino, err6 := strconv.ParseUint(f[5], 10, 64)
	if err := errors.Join(err1, err2, err3, err4, err5, err6); err != nil {
		return nil, fmt.Errorf("unexpected stat answer %q", s)
	}
	return &remoteInfo{name: name, size: size, mode: unixMode(uint32(raw)), modTime: time.Unix(mtime, 0),
		id: FileID{Dev: dev, Ino: ino, Nlink: nlink}}, nil
}

// unixMode converts a st_mode to an fs.FileMode, as package os does.
func unixMode(m uint32) fs.FileMode {
	mode := fs.FileMode(m & 0o777)
	switch m & 0o170000 {
	case 0o040000:
		mode |= fs.ModeDir
	case 0o120000:
		mode |= fs.ModeSymlink
	case 0o010000:
		mode |= fs.ModeNamedPipe
	case 0o140000:
		mode |= fs.ModeSocket
	case 0o020000:
		mode |= fs.ModeDevice | fs.ModeCharDevice
	case 0o060000:
		mode |= fs.ModeDevice
	}
	if m&0o4000 != 0 {
		mode |= fs.ModeSetuid
	}
	if m&0o2000 != 0 {
		mode |= fs.ModeSetgid
	}
	if m&0o1000 != 0 {
		mode |= fs.ModeSticky
	}
	return mode
}

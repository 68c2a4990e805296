package nativeengine

import (
	"bufio"
	"context"
	_ "embed"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/hermes-agent/hermes-wasm-exec/internal/backend"
	"github.com/hermes-agent/hermes-wasm-exec/internal/cgroup"
	"github.com/hermes-agent/hermes-wasm-exec/internal/engine"
)

// relaySource is the relay a remote backend runs (see relay.py): it stages
// the files, starts the script's python and multiplexes its output and its
// tool connections over the backend's stdio.
//
//go:embed relay.py
var relaySource string

// frame kinds of the relay protocol (relay.py).
const (
	frameStdout  = 'o'
	frameStderr  = 'e'
	frameConnect = 'c'
	frameData    = 'd'
	frameClose   = 'x'
	frameExit    = 'q'
	frameKill    = 'k'
)

// maxFrame bounds a frame's data: the relay sends at most 64 KiB at once.
const maxFrame = 1 << 20

// remoteChild is a script's python started by the relay on a remote
// backend. It implements proc.
type remoteChild struct {
	be     backend.Backend
	p      backend.Process
	stdin  io.WriteCloser
	wmu    sync.Mutex
	stdout *io.PipeReader
	stderr *io.PipeReader
	ln     *muxListener

	exited  chan struct{}
	outcome engine.Outcome
	// reported is set when the relay sent the exit frame (outcome is then
	// python's).
	reported bool
	// started is closed on the relay's first frame: python runs.
	started chan struct{}
}

// startRemote starts python with args (file names among files are staged
// by the relay in a private dir) on be, in workdir (empty: the backend's
// cwd) with env, and serves its tool connections with handler.
func startRemote(ctx context.Context, be backend.Backend, python string, files map[string][]byte, args []string, workdir string, env []string, handler callHandler) (*remoteChild, *Server, error) {
	ln := newMuxListener()
	srv := newServer(context.WithoutCancel(ctx), ln, "", handler)
	outR, outW := io.Pipe()
	c := &remoteChild{be: be, ln: ln, exited: make(chan struct{}), started: make(chan struct{})}
	stdoutR, stdoutW := io.Pipe()
	stderrR, stderrW := io.Pipe()
	c.stdout, c.stderr = stdoutR, stderrR
	var stderrTail limitedBuffer
	stderrTail.max = startupOutputLimit
	p, err := be.Start(context.WithoutCancel(ctx), backend.Command{
		Argv:        []string{python, "-u", "-c", relaySource},
		Dir:         workdir,
		Env:         env,
		Interactive: true,
		Stdout:      outW,
		Stderr:      &stderrTail,
	})
	if err != nil {
		srv.Close()
		return nil, nil, err
	}
	c.p, c.stdin = p, p.Stdin()
	bundle := map[string]any{"argv": args, "env": map[string]string{"HERMES_RPC_TOKEN": srv.Token()}}
	staged := map[string]string{}
	for name, content := range files {
		staged[name] = string(content)
	}
	bundle["files"] = staged
	line, _ := json.Marshal(bundle)
	if _, err := c.stdin.Write(append(line, '\n')); err != nil {
		p.Stop(time.Second)
	}
	// The demultiplexer: output to the pipes, connections to the server.
	demuxed := make(chan struct{})
	go func() {
		c.demux(outR, stdoutW, stderrW)
		stdoutW.Close()
		stderrW.Close()
		close(demuxed)
	}()
	go func() {
		code, werr := p.Wait()
		outW.Close()
		<-demuxed
		select {
		case <-c.started:
		default:
			c.outcome = missingPython(be, python, code, werr, stderrTail.tail())
		}
		if !c.reported && c.outcome.Crash == "" {
			c.outcome = engine.Outcome{ExitCode: -1, Crash: fmt.Sprintf("The connection to the %s backend ended (exit code %d)%s", be.Name(), code, stderrTail.tail())}
		}
		ln.Close()
		close(c.exited)
	}()
	return c, srv, nil
}

// relayIncompletePython is the relay's exit status when its python lacks
// modules it needs (relay.py).
const relayIncompletePython = 120

// missingPython explains a relay that never ran.
func missingPython(be backend.Backend, python string, code int, err error, stderr string) engine.Outcome {
	where := be.Name() + " backend"
	if t := be.Target(); t != "" {
		where += " (" + t + ")"
	}
	if code == relayIncompletePython {
		return engine.Outcome{ExitCode: -1, Crash: fmt.Sprintf("Project mode needs a complete Python 3 in the %s: its %s lacks part of the standard library%s. Install the full interpreter there (Debian/Ubuntu: apt-get install python3, not only python3-minimal), or use code_execution.mode: strict, which runs the script here in the wasm sandbox and sends only its tool calls to the backend.", where, python, stderr)}
	}
	if code == 127 {
		return engine.Outcome{ExitCode: -1, Crash: fmt.Sprintf("Project mode needs %s in the %s, and it has none: install it there (Debian/Ubuntu: apt-get install python3-minimal; Alpine: apk add python3), or use code_execution.mode: strict, which runs the script here in the wasm sandbox and sends only its tool calls to the backend.", python, where)}
	}
	msg := fmt.Sprintf("%s could not be started on the %s (exit code %d", python, where, code)
	if err != nil {
		msg += ": " + err.Error()
	}
	return engine.Outcome{ExitCode: -1, Crash: msg + ")" + stderr}
}

// demux reads the relay's frames until it ends.
func (c *remoteChild) demux(r io.Reader, stdout, stderr *io.PipeWriter) {
	br := bufio.NewReaderSize(r, 64<<10)
	var head [9]byte
	conns := map[uint32]net.Conn{}
	defer func() {
		for _, conn := range conns {
			conn.Close()
		}
	}()
	first := true
	for {
		if _, err := io.ReadFull(br, head[:]); err != nil {
			return
		}
		if first {
			close(c.started)
			first = false
		}
		kind, sid, n := head[0], binary.BigEndian.Uint32(head[1:5]), binary.BigEndian.Uint32(head[5:9])
		if n > maxFrame {
			// Not the relay's: a process in the target writing to its
			// stdout. The stream can no longer be trusted: the rest is
			// read and dropped, so the relay still ends.
			io.Copy(io.Discard, br)
			return
		}
		data := make([]byte, n)
		if _, err := io.ReadFull(br, data); err != nil {
			return
		}
		switch kind {
		case frameStdout:
			stdout.Write(data)
		case frameStderr:
			stderr.Write(data)
		case frameConnect:
			host, script := net.Pipe()
			conns[sid] = script
			if !c.ln.push(host) {
				script.Close()
				continue
			}
			go c.forward(sid, script)
		case frameData:
			if conn := conns[sid]; conn != nil {
				conn.Write(data)
			}
		case frameClose:
			if conn := conns[sid]; conn != nil {
				conn.Close()
				delete(conns, sid)
			}
		case frameExit:
			var rep struct {
				Code   int `json:"code"`
				Signal int `json:"signal"`
			}
			json.Unmarshal(data, &rep)
			c.reported = true
			c.outcome = engine.Outcome{ExitCode: rep.Code}
			if rep.Signal != 0 {
				c.outcome = engine.Outcome{ExitCode: -1, Crash: fmt.Sprintf("Python was killed by signal %d.", rep.Signal)}
			}
			stdout.Close()
			stderr.Close()
		}
	}
}

// forward sends what the server answers on a connection to the relay.
func (c *remoteChild) forward(sid uint32, conn net.Conn) {
	buf := make([]byte, 64<<10)
	for {
		n, err := conn.Read(buf)
		if n > 0 {
			if c.send(frameData, sid, buf[:n]) != nil {
				return
			}
		}
		if err != nil {
			c.send(frameClose, sid, nil)
			return
		}
	}
}

// send writes one frame to the relay.
func (c *remoteChild) send(kind byte, sid uint32, data []byte) error {
	var head [9]byte
	head[0] = kind
	binary.BigEndian.PutUint32(head[1:5], sid)
	binary.BigEndian.PutUint32(head[5:9], uint32(len(data)))
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if _, err := c.stdin.Write(head[:]); err != nil {
		return err
	}
	_, err := c.stdin.Write(data)
	return err
}

func (c *remoteChild) done() <-chan struct{} { return c.exited }

func (c *remoteChild) outputs() (io.Reader, io.Reader) { return c.stdout, c.stderr }

// stop asks the relay to stop python's process group (SIGTERM, SIGKILL
// after grace), then stops whatever of the command is left in the target.
func (c *remoteChild) stop(grace time.Duration) {
	c.send(frameKill, 0, []byte(strconv.FormatFloat(grace.Seconds(), 'f', 3, 64)))
	t := time.NewTimer(grace + 2*time.Second)
	defer t.Stop()
	select {
	case <-c.exited:
	case <-t.C:
	}
	c.p.Stop(time.Second)
	<-c.exited
}

func (c *remoteChild) kill() {
	select {
	case <-c.exited:
	default:
		c.p.Stop(100 * time.Millisecond)
	}
	<-c.exited
}

// drain waits until the relay has ended and the output readers are done,
// for at most wait after its end.
func (c *remoteChild) drain(read <-chan struct{}, wait time.Duration) {
	drainAfter(c.exited, read, wait, func() {
		c.stdout.Close()
		c.stderr.Close()
	})
}

func (c *remoteChild) release() { c.stdin.Close() }

func (c *remoteChild) result() engine.Outcome { return c.outcome }

func (*remoteChild) limitEvents() cgroup.Events { return cgroup.Events{} }

// muxListener is the net.Listener of a remote run's server: its
// connections are the script's, carried by the relay.
type muxListener struct {
	ch     chan net.Conn
	mu     sync.Mutex
	closed bool
	done   chan struct{}
}

func newMuxListener() *muxListener {
	return &muxListener{ch: make(chan net.Conn), done: make(chan struct{})}
}

// push hands a new connection to Accept; false once closed.
func (l *muxListener) push(c net.Conn) bool {
	select {
	case l.ch <- c:
		return true
	case <-l.done:
		return false
	}
}

func (l *muxListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *muxListener) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed {
		l.closed = true
		close(l.done)
	}
	return nil
}

func (l *muxListener) Addr() net.Addr { return muxAddr{} }

type muxAddr struct{}

func (muxAddr) Network() string { return "relay" }
func (muxAddr) String() string  { return "relay" }

package hostfuncs

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/hermes-agent/hermes-wasm-exec/internal/backend"
	"github.com/hermes-agent/hermes-wasm-exec/internal/proctree"
)

const (
	// terminalDefaultTimeout applies when timeout is absent or not positive.
	terminalDefaultTimeout = 180 * time.Second
	// terminalMaxTimeout caps a command's timeout.
	terminalMaxTimeout = 600 * time.Second
	// terminalHeadChars and terminalTailChars are what is kept of output
	// over terminalHeadChars+terminalTailChars (50,000) characters: 40%
	// head, 60% tail.
	terminalHeadChars = 20000
	terminalTailChars = 30000
	// terminalStopGrace is the time between SIGTERM and SIGKILL when the
	// command's tree is stopped, as for a script (docs/behaviour.md §5).
	terminalStopGrace = proctree.DefaultGrace
	// terminalTimeoutExit is the exit code reported for a timeout.
	terminalTimeoutExit = 124
	// terminalCancelExit is the exit code reported when ctx is cancelled.
	terminalCancelExit = 130
)

// terminalArgNames are the only arguments terminal accepts: Hermes's
// three, and the two the WASI interpreter's subprocess module passes
// (SubprocessStdinArg, SubprocessSplitArg).
var terminalArgNames = map[string]bool{"command": true, "timeout": true, "workdir": true,
	SubprocessStdinArg: true, SubprocessSplitArg: true}

// The arguments with which the WASI interpreter's subprocess, os.system
// and os.popen run their commands through terminal (the same path: the
// backend, the environment, the approval check, the timeout and the
// budget of tool calls). They are not in the tool's documented signature.
const (
	// SubprocessStdinArg is the command's standard input, base64 (the
	// command reads end of file after it; without it, empty input).
	SubprocessStdinArg = "_stdin_b64"
	// SubprocessSplitArg, true, keeps stderr apart: the result's "output"
	// is then the command's stdout only, and "stderr" its stderr (each
	// capped as output is).
	SubprocessSplitArg = "_split_stderr"
)

type terminalArgs struct {
	Command  string   `json:"command"`
	Timeout  *float64 `json:"timeout"`
	Workdir  *string  `json:"workdir"`
	StdinB64 *string  `json:"_stdin_b64"`
	Split    bool     `json:"_split_stderr"`
}

// terminal implements the foreground-only terminal tool: the command runs
// in the backend (backend.Backend.Start: on this host through the platform
// shell in a process tree of its own, see proctree) with an empty stdin and
// the scrubbed environment, stdout and stderr combined. The whole tree is
// stopped (SIGTERM, then SIGKILL after terminalStopGrace) on timeout, on
// ctx cancellation and once the command exits; the backend still reads
// output for a short while after that, in case a descendant that escaped
// the tree keeps the pipe open.
func (t *Tools) terminal(ctx context.Context, raw json.RawMessage) result {
	if r := rejectTerminalExtras(raw); r != nil {
		return r
	}
	var a terminalArgs
	if r := decodeArgs("terminal", raw, &a); r != nil {
		return r
	}
	if strings.TrimSpace(a.Command) == "" {
		return result{"error": "Invalid arguments for terminal: command is required"}
	}
	timeout := terminalTimeout(a.Timeout)
	failed := func(msg string) result {
		return result{"output": "", "exit_code": -1, "error": msg}
	}
	dir := t.workdir
	if a.Workdir != nil && *a.Workdir != "" {
		dir = t.resolve(*a.Workdir)
		fi, err := t.fs.Stat(dir)
		if errors.Is(err, fs.ErrNotExist) {
			return failed("Working directory does not exist: " + *a.Workdir)
		}
		if err != nil {
			return failed(fmt.Sprintf("Cannot use working directory '%s': %v", *a.Workdir, unwrapPathError(err)))
		}
		if !fi.IsDir() {
			return failed(fmt.Sprintf("Working directory '%s' is not a directory", *a.Workdir))
		}
	}
	if err := ctx.Err(); err != nil {
		return failed(fmt.Sprintf("Command cancelled: %v", err))
	}

	out := newOutputCapture(terminalHeadChars, terminalTailChars)
	// The same writer for both streams: one pipe, so their order is kept.
	cmd := backend.Command{Shell: a.Command, Dir: dir, Env: t.env, Stdout: out, Stderr: out}
	var errOut *outputCapture
	if a.Split {
		errOut = newOutputCapture(terminalHeadChars, terminalTailChars)
		cmd.Stderr = errOut
	}
	if a.StdinB64 != nil {
		in, err := base64.StdEncoding.DecodeString(*a.StdinB64)
		if err != nil {
			return failed("Invalid arguments for terminal: " + SubprocessStdinArg + " is not base64: " + err.Error())
		}
		cmd.Stdin = bytes.NewReader(in)
	}
	proc, err := t.backend.Start(ctx, cmd)
	if err != nil {
		return failed(fmt.Sprintf("Failed to start command: %v", err))
	}
	var (
		code    int
		waitErr error
	)
	waitDone := make(chan struct{})
	go func() {
		code, waitErr = proc.Wait()
		close(waitDone)
	}()

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var timedOut, cancelled bool
	select {
	case <-waitDone:
	case <-timer.C:
		timedOut = true
		proc.Stop(terminalStopGrace)
		<-waitDone
	case <-ctx.Done():
		cancelled = true
		proc.Stop(terminalStopGrace)
		<-waitDone
	}
	output := out.finish()
	var r result
	switch {
	case timedOut:
		secs := strconv.FormatFloat(timeout.Seconds(), 'f', -1, 64)
		r = result{"output": "", "exit_code": terminalTimeoutExit, "error": "Command timed out after " + secs + " seconds"}
	case cancelled:
		r = result{"output": output, "exit_code": terminalCancelExit, "error": fmt.Sprintf("Command cancelled: %v", ctx.Err())}
	case waitErr != nil:
		r = result{"output": output, "exit_code": -1, "error": fmt.Sprintf("Lost the command's exit status: %v", waitErr)}
	default:
		r = result{"output": output, "exit_code": code, "error": nil}
	}
	if errOut != nil {
		r["stderr"] = errOut.finish()
		if timedOut {
			r["stderr"] = ""
		}
	}
	return r
}

// terminalTimeout turns the timeout argument (seconds) into a duration:
// absent or not positive means 180 s, and at most 600 s.
func terminalTimeout(secs *float64) time.Duration {
	if secs == nil || !(*secs > 0) {
		return terminalDefaultTimeout
	}
	if *secs >= terminalMaxTimeout.Seconds() {
		return terminalMaxTimeout
	}
	return time.Duration(*secs * float64(time.Second))
}

// rejectTerminalExtras refuses arguments terminal does not have, such as
// background or pty, with a message saying why.
func rejectTerminalExtras(raw json.RawMessage) result {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil // not an object: decodeArgs reports it
	}
	var extra []string
	for k := range m {
		if !terminalArgNames[k] {
			extra = append(extra, strconv.Quote(k))
		}
	}
	if len(extra) == 0 {
		return nil
	}
	sort.Strings(extra)
	return result{"error": fmt.Sprintf("Invalid arguments for terminal: unsupported argument %s. "+
		"terminal inside execute_code is foreground only: it accepts just command, timeout and workdir "+
		"(no background, pty or similar options). Run background or interactive processes with the regular terminal tool.",
		strings.Join(extra, ", "))}
}

// outputCapture collects a command's output in bounded memory: line ends
// are made "\n" ("\r\n" and a lone "\r" alike, as Hermes's text-mode read
// of the shell's output makes them: cmd.exe ends its lines with "\r\n"),
// ANSI escape sequences are stripped as the bytes stream in, the first headChars
// characters are kept, and a byte window large enough for the last
// tailChars characters. It is safe for concurrent use.
type outputCapture struct {
	mu        sync.Mutex
	done      bool
	afterCR   bool // the last byte written was '\r'
	strip     ansiStripper
	headChars int
	tailChars int
	head      []byte
	headRunes int
	tail      []byte
	total     int // characters after stripping
}

// newOutputCapture returns a capture keeping headChars + tailChars.
func newOutputCapture(headChars, tailChars int) *outputCapture {
	return &outputCapture{headChars: headChars, tailChars: tailChars}
}

// Write implements io.Writer; it never fails.
func (c *outputCapture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.done {
		c.strip.feed(c.newlines(p), c.keep)
	}
	return len(p), nil
}

// newlines turns p's "\r\n" and lone "\r" into "\n", a "\r\n" split
// between two writes too.
func (c *outputCapture) newlines(p []byte) []byte {
	if !c.afterCR && bytes.IndexByte(p, '\r') < 0 {
		return p
	}
	out := make([]byte, 0, len(p))
	for _, b := range p {
		switch {
		case b == '\r':
			out = append(out, '\n')
		case b == '\n' && c.afterCR:
			// already given as the '\r'
		default:
			out = append(out, b)
		}
		c.afterCR = b == '\r'
	}
	return out
}

// keep stores stripped bytes b.
func (c *outputCapture) keep(b []byte) {
	for i, x := range b {
		if utf8.RuneStart(x) {
			c.total++
		}
		if c.headRunes < c.headChars || !utf8.RuneStart(x) && len(c.tail) == 0 {
			if utf8.RuneStart(x) {
				c.headRunes++
			}
			c.head = append(c.head, x)
			continue
		}
		c.appendTail(b[i:])
		return
	}
}

// appendTail adds rest (already counted up to its first byte) to the tail
// window, dropping the oldest bytes beyond what tailChars can need.
func (c *outputCapture) appendTail(rest []byte) {
	for _, x := range rest[1:] {
		if utf8.RuneStart(x) {
			c.total++
		}
	}
	window := c.tailChars * utf8.UTFMax
	c.tail = append(c.tail, rest...)
	if len(c.tail) > 2*window {
		n := copy(c.tail, c.tail[len(c.tail)-window:])
		c.tail = c.tail[:n]
	}
}

// finish stops the capture and renders the output: everything when it fits
// in headChars+tailChars characters, else the head, a truncation notice and
// the tail.
func (c *outputCapture) finish() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.done = true
	if c.total <= c.headChars+c.tailChars {
		return strings.ToValidUTF8(string(c.head)+string(c.tail), "\uFFFD")
	}
	tail := c.tail
	for len(tail) > 0 && !utf8.RuneStart(tail[0]) {
		tail = tail[1:]
	}
	if n := utf8.RuneCount(tail); n > c.tailChars {
		skip := n - c.tailChars
		for i := range string(tail) {
			if skip == 0 {
				tail = tail[i:]
				break
			}
			skip--
		}
	}
	omitted := c.total - c.headChars - c.tailChars
	notice := fmt.Sprintf("\n\n... [OUTPUT TRUNCATED - %d chars omitted out of %d total] ...\n\n", omitted, c.total)
	return strings.ToValidUTF8(string(c.head), "\uFFFD") + notice + strings.ToValidUTF8(string(tail), "\uFFFD")
}

// ansiStripper removes ANSI/VT escape sequences from a byte stream, keeping
// its state across writes: CSI sequences (ESC [ ... final), string
// sequences (OSC, DCS, SOS, PM, APC, ended by BEL or ESC \) and the short
// ESC sequences.
type ansiStripper struct {
	state  int
	strLen int
}

const (
	ansiNormal = iota
	ansiEsc
	ansiCSI
	ansiInter
	ansiString
	ansiStringEsc
)

// ansiMaxString ends an unterminated string sequence so that a stray ESC ]
// cannot swallow the rest of the output.
const ansiMaxString = 4096

// feed strips p, passing each run of kept bytes to emit.
func (s *ansiStripper) feed(p []byte, emit func([]byte)) {
	start := 0
	flush := func(end int) {
		if end > start {
			emit(p[start:end])
		}
	}
	for i := 0; i < len(p); i++ {
		b := p[i]
		switch s.state {
		case ansiNormal:
			if b == 0x1b {
				flush(i)
				s.state = ansiEsc
			}
			continue
		case ansiEsc:
			switch {
			case b == '[':
				s.state = ansiCSI
			case b == ']' || b == 'P' || b == 'X' || b == '^' || b == '_':
				s.state, s.strLen = ansiString, 0
			case b >= 0x20 && b <= 0x2f:
				s.state = ansiInter
			case b >= 0x30 && b <= 0x7e:
				s.state = ansiNormal
			case b == 0x1b:
			default:
				s.state = ansiNormal
				start = i
				continue
			}
		case ansiCSI:
			switch {
			case b >= 0x40 && b <= 0x7e:
				s.state = ansiNormal
			case b >= 0x20 && b <= 0x3f:
			default:
				s.state = ansiNormal
				start = i
				if b == 0x1b {
					s.state = ansiEsc
				}
				continue
			}
		case ansiInter:
			switch {
			case b >= 0x20 && b <= 0x2f:
			case b >= 0x30 && b <= 0x7e:
				s.state = ansiNormal
			default:
				s.state = ansiNormal
				start = i
				if b == 0x1b {
					s.state = ansiEsc
				}
				continue
			}
		case ansiString:
			s.strLen++
			switch {
			case b == 0x07:
				s.state = ansiNormal
			case b == 0x1b:
				s.state = ansiStringEsc
			case s.strLen > ansiMaxString:
				s.state = ansiNormal
			}
		case ansiStringEsc:
			if b == '\\' {
				s.state = ansiNormal
			} else {
				s.state = ansiEsc
				i-- // reprocess b as the start of a new sequence
				continue
			}
		}
		start = i + 1
	}
	if s.state == ansiNormal {
		flush(len(p))
	}
}

package mcpserver

import (
	"bytes"
	"encoding/json"
	"io"
	"sync"
)

// stdio is the stdio transport's two ends with one rule added: the end of
// input waits until every request read has been answered. The MCP SDK ends
// its connection at the end of input and drops the answers still to come,
// so a client that pipes a request and closes its end (`printf
// '<initialize>\n' | hermes-wasm-exec mcp`) got nothing; serve answers
// such a request, and so does mcp now. Requests are told apart from
// notifications and answers by their id and method, line by line.
type stdio struct {
	in   io.Reader
	out  io.Writer
	done <-chan struct{} // stop waiting: the server is shutting down

	mu      sync.Mutex
	changed chan struct{} // closed and replaced when pending shrinks
	pending map[string]bool
	inLine  []byte
	outLine []byte
}

func newStdio(in io.Reader, out io.Writer, done <-chan struct{}) *stdio {
	return &stdio{in: in, out: out, done: done, pending: map[string]bool{}, changed: make(chan struct{})}
}

// message is what stdio reads of a JSON-RPC message.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
}

// lines appends p to *buf and calls f with each complete line.
func lines(buf *[]byte, p []byte, f func([]byte)) {
	*buf = append(*buf, p...)
	for {
		i := bytes.IndexByte(*buf, '\n')
		if i < 0 {
			return
		}
		f((*buf)[:i])
		*buf = (*buf)[i+1:]
	}
}

// Read reads stdin, noting each request; at the end of input it waits
// until every noted request has an answer (or the server stops).
func (s *stdio) Read(p []byte) (int, error) {
	n, err := s.in.Read(p)
	s.mu.Lock()
	lines(&s.inLine, p[:n], func(line []byte) {
		var m message
		if json.Unmarshal(line, &m) == nil && m.Method != "" && len(m.ID) > 0 && string(m.ID) != "null" {
			s.pending[string(m.ID)] = true
		}
	})
	s.mu.Unlock()
	if err == nil || n > 0 {
		return n, err
	}
	for {
		s.mu.Lock()
		left, changed := len(s.pending), s.changed
		s.mu.Unlock()
		if left == 0 {
			return 0, err
		}
		select {
		case <-changed:
		case <-s.done:
			return 0, err
		}
	}
}

// Write writes to stdout, noting each answer.
func (s *stdio) Write(p []byte) (int, error) {
	n, err := s.out.Write(p)
	s.mu.Lock()
	defer s.mu.Unlock()
	before := len(s.pending)
	lines(&s.outLine, p[:n], func(line []byte) {
		var m message
		if json.Unmarshal(line, &m) == nil && m.Method == "" && len(m.ID) > 0 {
			delete(s.pending, string(m.ID))
		}
	})
	if len(s.pending) < before {
		close(s.changed)
		s.changed = make(chan struct{})
	}
	return n, err
}

// Close does nothing: the process's stdin and stdout stay open.
func (s *stdio) Close() error { return nil }

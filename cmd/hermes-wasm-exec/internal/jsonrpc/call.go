package jsonrpc

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
)

// requestIDBytes is the size of the random part of the id of a request to
// the client: 128 bits, so that an answer cannot be forged by guessing.
const requestIDBytes = 16

// Outgoing is a request sent to the client that awaits its answer.
type Outgoing struct {
	// ID is the request's id: "srv-" and 128 random bits in hex. Whoever
	// answers must have read the request: a process that can write into
	// the client's stream (a helper a script left behind, writing to
	// /proc/<serve>/fd/0) cannot guess it.
	ID string
	c  *Conn
	ch chan answer
}

// answer is a client's answer to a request: its result, or why there is
// none.
type answer struct {
	result json.RawMessage
	err    error
}

// Send sends the client a request, and registers it as awaiting an answer:
// call Wait for it. It fails when the connection can no longer be read.
func (c *Conn) Send(method string, params any) (*Outgoing, error) {
	select {
	case <-c.eof:
		return nil, errors.New("the client's connection is closed")
	default:
	}
	o := &Outgoing{ID: newRequestID(), c: c, ch: make(chan answer, 1)}
	c.mu.Lock()
	c.pending[o.ID] = o.ch
	c.mu.Unlock()
	idJSON, _ := json.Marshal(o.ID)
	c.send(message{JSONRPC: "2.0", ID: idJSON, Method: method, Params: params})
	return o, nil
}

// Notify sends the client a notification (a request without an id,
// which gets no answer). It is dropped when the connection is gone.
func (c *Conn) Notify(method string, params any) {
	c.send(message{JSONRPC: "2.0", Method: method, Params: params})
}

// newRequestID returns a fresh id for a request to the client: see
// Outgoing.ID.
func newRequestID() string {
	b := make([]byte, requestIDBytes)
	_, _ = rand.Read(b) // never fails (crypto/rand aborts the program instead)
	return "srv-" + hex.EncodeToString(b)
}

// Wait waits for the client's answer until ctx is done, and returns its
// result. An error answer and a closed connection are errors. The request
// no longer awaits an answer once Wait returns.
func (o *Outgoing) Wait(ctx context.Context) (json.RawMessage, error) {
	c := o.c
	defer func() {
		c.mu.Lock()
		delete(c.pending, o.ID)
		c.mu.Unlock()
	}()
	select {
	case a := <-o.ch:
		return a.result, a.err
	case <-c.eof:
		return nil, errors.New("the client's connection closed before it answered")
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// answered routes a client's response to the request it answers: only to
// a request of this connection that still waits, and only once. A response
// with any other id (unknown, already answered, given up on, or sent on
// another connection) is dropped, and never answered. A response with a
// waiting id that is not a proper JSON-RPC 2.0 response (no "jsonrpc":
// "2.0", or both result and error, or a malformed error) reaches the
// request as an error.
func (c *Conn) answered(id json.RawMessage, m map[string]json.RawMessage) {
	var sid string
	if json.Unmarshal(id, &sid) != nil {
		sid = ""
	}
	c.mu.Lock()
	ch, ok := c.pending[sid]
	delete(c.pending, sid)
	c.mu.Unlock()
	if !ok {
		c.opts.Debugf("dropped a response with id %s: no request of this connection with that id waits for an answer (unknown, already answered or given up)", LogID(string(id)))
		return
	}
	a := answer{result: m["result"]}
	_, hasResult := m["result"]
	rawErr, hasError := m["error"]
	if hasError && string(compact(rawErr)) == "null" {
		hasError = false // some clients send "error": null beside a result
	}
	var version string
	switch {
	case json.Unmarshal(m["jsonrpc"], &version) != nil || version != "2.0":
		a.err = errors.New(`the client's answer is not a JSON-RPC 2.0 response ("jsonrpc" must be "2.0")`)
	case hasResult && hasError:
		a.err = errors.New("the client's answer has both a result and an error")
	case !hasError && !hasResult:
		a.err = errors.New("the client's answer has neither a result nor an error")
	case hasError:
		var e Error
		if json.Unmarshal(rawErr, &e) != nil {
			a.err = errors.New("the client answered with a malformed error object")
		} else {
			a.err = fmt.Errorf("the client answered with an error: %s", e.Message)
		}
	}
	if a.err != nil {
		c.opts.Debugf("the answer to %s is an error: %v", LogID(sid), a.err)
	}
	ch <- a
}

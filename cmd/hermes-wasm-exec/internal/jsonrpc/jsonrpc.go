// Package jsonrpc is the JSON-RPC 2.0 peer behind `hermes-wasm-exec serve`:
// one JSON object per line on a stream (framed by internal/wire's bounded
// line reader), requests and notifications handed to a handler in arrival
// order, replies, an optional token a connection must authenticate with
// before anything else, and requests this side sends the client (each
// awaiting its answer in a map of pending ids). It knows no method of the
// product: those are in the serve package, which is built on it.
//
// It imports only the standard library and internal/wire; only the serve
// package imports it.
package jsonrpc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// JSON-RPC 2.0 error codes, and the server-defined ones of serve.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	// CodeShuttingDown answers a call that arrives while the server stops.
	CodeShuttingDown = -32000
	// CodeUnauthorized answers a call before authenticate, or a wrong token.
	CodeUnauthorized = -32001
)

// Error is a JSON-RPC 2.0 error object.
type Error struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// Error returns the message.
func (e *Error) Error() string { return e.Message }

// InvalidParams is a CodeInvalidParams error whose message is "Invalid
// params: " and the formatted text.
func InvalidParams(format string, a ...any) *Error {
	return &Error{Code: CodeInvalidParams, Message: "Invalid params: " + fmt.Sprintf(format, a...)}
}

// Request is a request or notification the client sent.
type Request struct {
	// ID is the request's id as sent (compacted JSON: a string, a number
	// or null); nil for a notification, which gets no reply.
	ID     json.RawMessage
	Method string
	// Params is the params member as sent; nil when absent.
	Params json.RawMessage
}

// message is any JSON-RPC 2.0 message this side sends: a request or a
// response.
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  any             `json:"params,omitempty"`
}

var nullID = json.RawMessage("null")

// IDOrNull is id, or null for a notification's (nil) id: for logs.
func IDOrNull(id json.RawMessage) json.RawMessage {
	if id == nil {
		return nullID
	}
	return id
}

// LogID shortens a request id for a debug log: enough to tell requests
// apart, not enough to answer one from a copy of the log.
func LogID(id string) string {
	if len(id) > 12 {
		return strings.ToValidUTF8(id[:12], "") + "…"
	}
	return id
}

func compact(raw json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}

// ParamsObject decodes params as an object whose keys are all in known
// (named parameters); absent or null params are an empty object, and a
// member that is null is left out ("not given").
func ParamsObject(params json.RawMessage, known ...string) (map[string]json.RawMessage, *Error) {
	p := map[string]json.RawMessage{}
	if len(params) == 0 || string(compact(params)) == "null" {
		return p, nil
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, InvalidParams("params must be an object with named parameters (%s)", strings.Join(known, ", "))
	}
	for k := range p {
		if !slices.Contains(known, k) {
			return nil, InvalidParams("unknown parameter %q (known: %s)", k, strings.Join(known, ", "))
		}
	}
	for k, v := range p {
		if string(compact(v)) == "null" {
			delete(p, k) // null means "not given"
		}
	}
	return p, nil
}

// sizeString writes a line limit for a message: "64 MiB", "4 KiB", or
// bytes.
func sizeString(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

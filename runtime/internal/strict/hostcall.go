package strict

import (
	"bytes"
	"context"

	"github.com/hermes-agent/hermes-wasm-exec/internal/engine"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// The tool channel: the interpreter's built-in module _hermes_host (see
// pyodide-assets/cpython/hermes_host.c) imports two functions from the host
// module "hermes":
//
//	call(req, req_len, buf, buf_cap i32) i32
//	take(buf, len i32) i32
//
// call hands the host one JSON request line; the host answers it
// synchronously, on the guest's own goroutine (a one-shot run's broker, or
// a kernel's dispatcher, which also hands out cells), writes up to buf_cap
// bytes of the response line into buf and returns the response's length.
// A longer response waits for take. call returns -1 when the instance was
// started without a channel.
const hostModule = "hermes"

// hostChannel is one instance's side of the channel, carried by the
// context the instance runs under.
type hostChannel struct {
	serve   func(ctx context.Context, line []byte) []byte
	pending []byte // the part of the last response that did not fit
	// reopen, while a resumed kernel reopens its files (and only then),
	// allows renumber requests (fdtable.go): the descriptors the image
	// recorded, each once, and the lowest a reopened file may have.
	reopen *reopenWindow
}

type hostChannelKey struct{}

// withChannel returns ctx carrying a channel served by serve, and the
// channel; the instance must be instantiated (and so run) under the
// returned context.
func withChannel(ctx context.Context, serve func(ctx context.Context, line []byte) []byte) (context.Context, *hostChannel) {
	ch := &hostChannel{serve: serve}
	return context.WithValue(ctx, hostChannelKey{}, ch), ch
}

// instantiateHostModule adds the "hermes" module to rt.
func instantiateHostModule(ctx context.Context, rt wazero.Runtime) error {
	i32 := api.ValueTypeI32
	_, err := rt.NewHostModuleBuilder(hostModule).
		NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(hostCall), []api.ValueType{i32, i32, i32, i32}, []api.ValueType{i32}).Export("call").
		NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(hostTake), []api.ValueType{i32, i32}, []api.ValueType{i32}).Export("take").
		Instantiate(ctx)
	return err
}

const errNoChannel = ^uint64(0) & 0xffffffff // -1 as an i32 result

func hostCall(ctx context.Context, mod api.Module, stack []uint64) {
	ch, _ := ctx.Value(hostChannelKey{}).(*hostChannel)
	reqPtr, reqLen := uint32(stack[0]), uint32(stack[1])
	bufPtr, bufCap := uint32(stack[2]), uint32(stack[3])
	if ch == nil {
		stack[0] = errNoChannel
		return
	}
	var resp []byte
	if reqLen > engine.MaxRequest {
		resp = []byte(engine.TooLargeReply)
	} else {
		req, ok := mod.Memory().Read(reqPtr, reqLen)
		if !ok {
			panic("hermes.call: request outside the guest's memory")
		}
		if bytes.HasPrefix(req, []byte(renumberPrefix)) {
			resp = renumberOp(ctx, mod, req, ch.reopen)
		} else {
			// The guest is blocked in this call, so its memory holds still;
			// copy anyway, since serve may keep what it decodes.
			resp = ch.serve(ctx, append([]byte(nil), req...))
		}
	}
	n := min(uint32(len(resp)), bufCap)
	if !mod.Memory().Write(bufPtr, resp[:n]) {
		panic("hermes.call: response buffer outside the guest's memory")
	}
	ch.pending = nil
	if int(n) < len(resp) {
		ch.pending = resp
	}
	stack[0] = uint64(uint32(len(resp)))
}

func hostTake(ctx context.Context, mod api.Module, stack []uint64) {
	ch, _ := ctx.Value(hostChannelKey{}).(*hostChannel)
	bufPtr, bufLen := uint32(stack[0]), uint32(stack[1])
	if ch == nil {
		stack[0] = errNoChannel
		return
	}
	n := min(uint32(len(ch.pending)), bufLen)
	if !mod.Memory().Write(bufPtr, ch.pending[:n]) {
		panic("hermes.take: buffer outside the guest's memory")
	}
	ch.pending = nil
	stack[0] = uint64(n)
}

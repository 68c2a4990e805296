package engine

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// Serve's fast path for the kernel loop's "next" line must take exactly
// the lines decodeRequest reads as a bare {Op: "next"}.
func TestIsNextLine(t *testing.T) {
	for line, want := range map[string]bool{
		`{"op":"next","done":null}` + "\n":                 true,
		`{"op":"next","done":{"n":1}}` + "\n":              true,
		`{"op":"next","done":{"n":123456}}` + "\n":         true,
		`{"op":"next","done":null}`:                        false, // no newline: decoded
		`{"op":"next","done":{"n":}}` + "\n":               false,
		`{"op":"next","done":{"n":-1}}` + "\n":             false,
		`{"op":"next","done":{"n":1,"x":2}}` + "\n":        false,
		`{"op":"next","done":{"n":1}},"op":"exit"}` + "\n": false,
		`{"op":"next","done":null,"op":"exit"}` + "\n":     false,
		`{"op":"next","done":{"n":1}}` + "\n\n":            false,
		`{"op": "next", "done": null}` + "\n":              false,
		`{"op":"exit","done":null}` + "\n":                 false,
	} {
		require.Equal(t, want, isNextLine([]byte(line)), line)
		if want {
			req, errResp := decodeRequest([]byte(line), nil)
			require.Nil(t, errResp)
			require.Equal(t, wireRequest{Op: "next"}, *req, line)
		}
	}
}

// cellResponse writes what encodeResponse writes for the same answer.
func TestCellResponse(t *testing.T) {
	for _, c := range []dispatchCell{
		{n: 1, code: "print(1)\n"},
		{n: 42, code: "x = '<&>' + \"\\\"\" + '\u2028é\U0001F600'\n\tpass", nonce: "abc123"},
		{n: 7, code: "bad \xff utf-8 \x00 \x1f"},
		{n: 1 << 40, code: ""},
	} {
		want := encodeResponse(map[string]any{"op": "cell", "n": c.n, "code": c.code, "nonce": c.nonce})
		require.Equal(t, string(want), string(cellResponse(&c)))
	}
}

// A kernel run in steps: Take holds the cell Send handed over until the
// step asks for it, Finish reports it done, and Probe gets the kernel's
// answer about its descriptors without numbering a cell.
func TestDispatcherSteps(t *testing.T) {
	d := NewDispatcher()
	d.SetCells(4)
	d.MarkReady()
	<-d.Ready()
	ctx := context.Background()
	next := []byte(`{"op":"next","done":null}` + "\n")

	stepped := make(chan string, 1)
	go func() {
		for d.Take(ctx) {
			resp := d.Serve(ctx, next, nil)
			var m map[string]any
			_ = json.Unmarshal(resp, &m)
			if m["op"] == "fds" {
				d.Serve(ctx, []byte(`{"op":"fds","open":[9,12],"offsets":[0,-1]}`+"\n"), nil)
			}
			stepped <- string(resp)
			d.Finish()
		}
		close(stepped)
	}()

	n, done, err := d.Send(ctx, "x = 1", "", NewBroker(nil, 10, nil))
	require.NoError(t, err)
	require.Equal(t, 5, n, "numbered on from SetCells")
	require.Contains(t, <-stepped, `"code":"x = 1"`)
	<-done

	open, offsets, err := d.Probe(ctx, 7)
	require.NoError(t, err)
	require.Equal(t, []int{9, 12}, open)
	require.Equal(t, []int64{0, -1}, offsets)
	require.JSONEq(t, `{"op":"fds","first":7}`, <-stepped)
	require.Equal(t, 5, d.Cells(), "a probe is not a cell")

	d.Close()
	_, ok := <-stepped
	require.False(t, ok, "Take returns false once closed")
	_, _, err = d.Probe(ctx, 7)
	require.ErrorIs(t, err, ErrKernelClosed)
}

package engine

import (
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

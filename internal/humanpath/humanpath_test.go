package humanpath

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestQuote(t *testing.T) {
	for _, tc := range []struct{ path, goos, want string }{
		{`C:\users\me\.hermes\cache\wasm`, "windows", `"C:\users\me\.hermes\cache\wasm"`},
		{`\\server\share\x y`, "windows", `"\\server\share\x y"`},
		{"C:\\bad\nname", "windows", `"C:\\bad\nname"`},
		{"/home/me/x y", "linux", `"/home/me/x y"`},
		{"/home/me/a\"b\nc", "linux", `"/home/me/a\"b\nc"`},
		{`/odd\name`, "darwin", `"/odd\\name"`},
	} {
		require.Equal(t, tc.want, quote(tc.path, tc.goos), "%s on %s", tc.path, tc.goos)
	}
}

package nativeengine

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestOutputRouterSplits feeds a cell's stream in every split into two
// and three chunks, and a byte at a time: the cell gets exactly the bytes
// before its mark, the mark is found, and nothing after it is routed.
func TestOutputRouterSplits(t *testing.T) {
	mark := newCellMark()
	require.Len(t, mark, 1+len("hermes-end-")+32+1)
	require.NotEqual(t, string(mark), string(newCellMark()))
	before := "out\x1e\x1ehermes-end-\x1ehermes" + string(mark[:len(mark)-1]) + "x" + "tail\x1e"
	stream := before + string(mark) + "after" + string(mark)
	check := func(chunks ...string) {
		t.Helper()
		var r outputRouter
		var got bytes.Buffer
		seen := r.begin(&got, mark)
		for _, c := range chunks {
			r.feed([]byte(c))
		}
		select {
		case <-seen:
		default:
			t.Fatalf("mark not seen in %q", chunks)
		}
		require.Equal(t, before, got.String(), "%q", chunks)
		r.end()
		r.feed([]byte("between cells"))
		require.Equal(t, before, got.String())
	}
	for i := 0; i <= len(stream); i++ {
		check(stream[:i], stream[i:])
		for j := i; j <= len(stream); j += 7 {
			check(stream[:i], stream[i:j], stream[j:])
		}
	}
	check(strings.Split(stream, "")...)
}

func TestOutputRouterEOF(t *testing.T) {
	mark := newCellMark()
	var r outputRouter
	var got bytes.Buffer
	seen := r.begin(&got, mark)
	r.feed([]byte("partial" + string(mark[:5])))
	require.Equal(t, "partial", got.String())
	r.finish()
	<-seen
	require.Equal(t, "partial"+string(mark[:5]), got.String(), "a held tail is the cell's at the end")
	// A stream that ended counts as marked at once.
	<-r.begin(&got, mark)

	var pass outputRouter
	var all bytes.Buffer
	pass.begin(&all, nil)
	pass.feed(mark)
	require.Equal(t, string(mark), all.String(), "without a mark everything passes")
	pass.end()
	pass.feed([]byte("x"))
	require.Equal(t, string(mark), all.String())
}

func TestLimitedBuffer(t *testing.T) {
	b := &limitedBuffer{max: 5}
	require.Equal(t, "", b.tail())
	n, err := b.Write([]byte("abc"))
	require.NoError(t, err)
	require.Equal(t, 3, n)
	n, _ = b.Write([]byte("defg"))
	require.Equal(t, 4, n)
	require.Equal(t, ": abcde\n[...]", b.tail())
}

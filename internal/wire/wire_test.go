package wire

import (
	"bufio"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/require"
)

func TestReadLine(t *testing.T) {
	const max = 40
	long := func(n int, c byte) string { return strings.Repeat(string(c), n) }

	// The reader is the smallest bufio allows (16), so lines span several
	// buffer fills; OneByteReader makes every read return one byte.
	readers := map[string]func(string) *bufio.Reader{
		"chunks": func(s string) *bufio.Reader { return bufio.NewReaderSize(strings.NewReader(s), 16) },
		"bytes": func(s string) *bufio.Reader {
			return bufio.NewReaderSize(iotest.OneByteReader(strings.NewReader(s)), 16)
		},
	}
	type step struct {
		line string
		err  error
	}
	cases := []struct {
		name  string
		input string
		want  []step
	}{
		{"one line", "abc\n", []step{{"abc", nil}, {"", io.EOF}}},
		{"empty input", "", []step{{"", io.EOF}}},
		{"empty line", "\n\n", []step{{"", nil}, {"", nil}, {"", io.EOF}}},
		{"exactly max", long(max, 'x') + "\n", []step{{long(max, 'x'), nil}, {"", io.EOF}}},
		{"max plus one", long(max+1, 'x') + "\n", []step{{"", ErrLineTooLarge}, {"", io.EOF}}},
		{"far too large then resync", long(10*max, 'x') + "\nnext\n" + long(max, 'y') + "\n",
			[]step{{"", ErrLineTooLarge}, {"next", nil}, {long(max, 'y'), nil}, {"", io.EOF}}},
		{"two oversize in a row", long(max+1, 'a') + "\n" + long(3*max, 'b') + "\nok\n",
			[]step{{"", ErrLineTooLarge}, {"", ErrLineTooLarge}, {"ok", nil}, {"", io.EOF}}},
		{"unterminated final line", "one\ntwo", []step{{"one", nil}, {"two", io.ErrUnexpectedEOF}, {"", io.EOF}}},
		{"unterminated long final line", "one\n" + long(max-1, 'z'), []step{{"one", nil}, {long(max-1, 'z'), io.ErrUnexpectedEOF}}},
		{"unterminated oversize final line", "one\n" + long(5*max, 'z'), []step{{"one", nil}, {"", io.ErrUnexpectedEOF}}},
		{"CR is kept", "a\r\n", []step{{"a\r", nil}, {"", io.EOF}}},
	}
	for rname, mk := range readers {
		for _, tc := range cases {
			t.Run(rname+"/"+tc.name, func(t *testing.T) {
				r := mk(tc.input)
				for i, s := range tc.want {
					got, err := ReadLine(r, max, true)
					if s.err != nil {
						require.ErrorIs(t, err, s.err, "step %d", i)
						require.Equal(t, s.line, string(got), "step %d", i)
						continue
					}
					require.NoError(t, err, "step %d", i)
					require.Equal(t, s.line, string(got), "step %d", i)
				}
			})
		}
	}

	t.Run("returned line is not overwritten by later reads", func(t *testing.T) {
		r := bufio.NewReaderSize(strings.NewReader("first\nsecond\n"), 16)
		a, err := ReadLine(r, max, true)
		require.NoError(t, err)
		_, err = ReadLine(r, max, true)
		require.NoError(t, err)
		require.Equal(t, "first", string(a))
	})
}

// TestReadLineNoDrain: without drain, a long line ends the read at once,
// having read no more than the buffer of it.
func TestReadLineNoDrain(t *testing.T) {
	src := strings.NewReader(strings.Repeat("x", 1000) + "\nnext\n")
	r := bufio.NewReaderSize(src, 16)
	_, err := ReadLine(r, 8, false)
	require.ErrorIs(t, err, ErrLineTooLarge)
	require.Greater(t, src.Len(), 900, "the rest of the line was not read")
}

func TestTokenEqual(t *testing.T) {
	require.True(t, TokenEqual("s3cret", []byte("s3cret")))
	require.False(t, TokenEqual("s3cre", []byte("s3cret")))
	require.False(t, TokenEqual("", []byte("s3cret")))
	require.False(t, TokenEqual("", nil), "an empty token matches nothing")
	require.False(t, TokenEqual("", []byte{}))
}

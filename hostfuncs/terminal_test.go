package hostfuncs

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTerminalArgErrors(t *testing.T) {
	tl, _ := newTestTools(t)
	tests := []struct {
		name   string
		args   any
		errHas []string
	}{
		{"background", map[string]any{"command": "echo hi", "background": true},
			[]string{"Invalid arguments for terminal", `"background"`, "foreground only"}},
		{"pty", map[string]any{"command": "echo hi", "pty": true}, []string{`"pty"`, "foreground only"}},
		{"several extras sorted", map[string]any{"command": "x", "pty": nil, "background": false, "check_interval": 5},
			[]string{`"background", "check_interval", "pty"`}},
		{"missing command", map[string]any{}, []string{"Invalid arguments for terminal: command is required"}},
		{"blank command", map[string]any{"command": "   "}, []string{"command is required"}},
		{"timeout wrong type", map[string]any{"command": "x", "timeout": "soon"}, []string{"Invalid arguments for terminal:"}},
		{"not an object", json.RawMessage(`["echo"]`), []string{"Invalid arguments for terminal:"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := callJSON(t, tl, "terminal", tc.args)
			for _, s := range tc.errHas {
				assert.Contains(t, res["error"], s)
			}
		})
	}
}

func TestTerminalWorkdirErrors(t *testing.T) {
	tl, dir := newTestTools(t)
	writeTestFile(t, dir, "file.txt", "x")
	tests := []struct {
		workdir string
		errHas  string
	}{
		{"missing", "Working directory does not exist: missing"},
		{"file.txt", "is not a directory"},
	}
	for _, tc := range tests {
		res := callJSON(t, tl, "terminal", map[string]any{"command": "echo hi", "workdir": tc.workdir})
		assert.Contains(t, res["error"], tc.errHas)
		assert.Equal(t, "", res["output"])
		assert.Equal(t, float64(-1), res["exit_code"])
	}
}

func TestTerminalCancelledBeforeStart(t *testing.T) {
	tl, _ := newTestTools(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res := tl.Call(ctx, "terminal", json.RawMessage(`{"command": "echo hi"}`))
	assert.Equal(t, "Command cancelled: context canceled", res["error"])
}

func TestTerminalTimeout(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	tests := []struct {
		in   *float64
		want time.Duration
	}{
		{nil, 180 * time.Second},
		{f(0), 180 * time.Second},
		{f(-5), 180 * time.Second},
		{f(1), time.Second},
		{f(2.5), 2500 * time.Millisecond},
		{f(600), 600 * time.Second},
		{f(601), 600 * time.Second},
		{f(1e300), 600 * time.Second},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, terminalTimeout(tc.in))
	}
}

func TestStripANSI(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"plain", "hello\nworld", "hello\nworld"},
		{"sgr colours", "\x1b[31mred\x1b[0m \x1b[1;32mbold green\x1b[m", "red bold green"},
		{"cursor and erase", "a\x1b[2K\x1b[10;20Hb\x1b[?25lc", "abc"},
		{"osc title bel", "\x1b]0;my title\x07text", "text"},
		{"osc hyperlink st", "\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\", "link"},
		{"charset select", "\x1b(Bascii", "ascii"},
		{"two-byte escapes", "\x1b7saved\x1b8\x1bc", "saved"},
		{"dcs string", "\x1bPq#0;2;0;0;0\x1b\\after", "after"},
		{"unicode kept", "\x1b[1m世界 ✓\x1b[0m", "世界 ✓"},
		{"broken csi keeps newline", "a\x1b[12\nb", "a\nb"},
		{"esc then control", "x\x1b\ny", "x\ny"},
		{"unterminated osc is bounded", "\x1b]" + strings.Repeat("t", ansiMaxString+10) + "rest", strings.Repeat("t", 9) + "rest"},
		{"cr kept", "50%\r100%\n", "50%\r100%\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, stripANSI(tc.in))
			// Byte-at-a-time feeding gives the same result.
			var st ansiStripper
			var out strings.Builder
			for i := 0; i < len(tc.in); i++ {
				st.feed([]byte{tc.in[i]}, func(b []byte) { out.Write(b) })
			}
			assert.Equal(t, tc.want, out.String())
		})
	}
}

func TestOutputCapture(t *testing.T) {
	tests := []struct {
		name       string
		head, tail int
		chunks     []string
		want       string
	}{
		{"fits", 3, 4, []string{"abc", "defg"}, "abcdefg"},
		{"empty", 3, 4, nil, ""},
		{"truncated", 3, 4, []string{"abcdefghij"},
			"abc\n\n... [OUTPUT TRUNCATED - 3 chars omitted out of 10 total] ...\n\nghij"},
		{"multibyte counted as chars", 2, 2, []string{"世界", "你好", "再见"},
			"世界\n\n... [OUTPUT TRUNCATED - 2 chars omitted out of 6 total] ...\n\n再见"},
		{"multibyte split across writes", 1, 1, []string{"\xe4", "\xb8\x96", "ab", "\xe7\x95", "\x8c"},
			"世\n\n... [OUTPUT TRUNCATED - 2 chars omitted out of 4 total] ...\n\n界"},
		{"ansi stripped before counting", 2, 2, []string{"\x1b[31mab\x1b[0m", "\x1b[1mcd\x1b[0m"}, "abcd"},
		{"escape split across writes", 10, 10, []string{"x\x1b", "[3", "1my"}, "xy"},
		{"many small writes", 2, 3, strings.Split(strings.Repeat("z", 50)+"END", ""),
			"zz\n\n... [OUTPUT TRUNCATED - 48 chars omitted out of 53 total] ...\n\nEND"},
		// Line ends as Hermes's text-mode read gives them.
		{"crlf is a newline", 100, 100, []string{"one\r\ntwo\r\n"}, "one\ntwo\n"},
		{"lone cr is a newline", 100, 100, []string{"50%\r100%\n"}, "50%\n100%\n"},
		{"crlf split across writes", 100, 100, []string{"a\r", "\nb\r", "\r\n"}, "a\nb\n\n"},
		{"newlines counted after", 3, 2, []string{"a\r\nb\r\nc"}, "a\nb\nc"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := newOutputCapture(tc.head, tc.tail)
			for _, ch := range tc.chunks {
				n, err := c.Write([]byte(ch))
				require.NoError(t, err)
				require.Equal(t, len(ch), n)
			}
			assert.Equal(t, tc.want, c.finish())
			// Writes after finish are dropped.
			c.Write([]byte("late"))
			assert.Equal(t, tc.want, c.finish())
		})
	}
}

func TestOutputCaptureBoundedMemory(t *testing.T) {
	c := newOutputCapture(terminalHeadChars, terminalTailChars)
	chunk := []byte(strings.Repeat("0123456789", 1000))
	for i := 0; i < 2000; i++ { // 20 MB
		c.Write(chunk)
	}
	assert.LessOrEqual(t, len(c.head), terminalHeadChars*4)
	assert.LessOrEqual(t, cap(c.tail), 4*terminalTailChars*4+len(chunk)*2)
	out := c.finish()
	assert.Contains(t, out, "[OUTPUT TRUNCATED - 19950000 chars omitted out of 20000000 total]")
	assert.Equal(t, terminalHeadChars+terminalTailChars, len(out)-len("\n\n... [OUTPUT TRUNCATED - 19950000 chars omitted out of 20000000 total] ...\n\n"))
}

// stripANSI removes ANSI escape sequences from s in one feed.
func stripANSI(s string) string {
	var out strings.Builder
	var st ansiStripper
	st.feed([]byte(s), func(b []byte) { out.Write(b) })
	return out.String()
}

func TestCommandEnv(t *testing.T) {
	require.Equal(t, []string{"PYTHONDONTWRITEBYTECODE=1"}, commandEnv(nil))
	env := []string{"PATH=/bin", "PYTHONDONTWRITEBYTECODE="}
	require.Equal(t, env, commandEnv(env), "the user's own setting is kept")
	base := make([]string, 1, 4)
	base[0] = "PATH=/bin"
	got := commandEnv(base)
	require.Equal(t, []string{"PATH=/bin", "PYTHONDONTWRITEBYTECODE=1"}, got)
	require.Len(t, base[:cap(base)][1:2], 1)
	require.Empty(t, base[:cap(base)][1], "the caller's slice is not written")
}

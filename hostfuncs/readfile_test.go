package hostfuncs

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadFileTable(t *testing.T) {
	long := strings.Repeat("x", 5000)
	exact := strings.Repeat("y", maxLineChars)
	wide := strings.Repeat("世", 3000)
	// The 8 KiB sniff window ends in the middle of a two-byte character.
	boundary := strings.Repeat(strings.Repeat("a", 99)+"\n", 81) + strings.Repeat("a", 91) + strings.Repeat("é", 10) + "\n"
	var many strings.Builder
	for i := 1; i <= 2500; i++ {
		fmt.Fprintf(&many, "line %d\n", i)
	}

	tests := []struct {
		name      string
		content   string
		args      string // JSON object; "%s" is replaced by the path
		want      string
		total     int
		truncated bool
		hint      string // substring; "" means no hint key
	}{
		{name: "simple", content: "a\nb\nc\n", args: `{"path": %q}`, want: "1|a\n2|b\n3|c", total: 3},
		{name: "no trailing newline", content: "a\nb", args: `{"path": %q}`, want: "1|a\n2|b", total: 2},
		{name: "crlf", content: "a\r\nb\r\n", args: `{"path": %q}`, want: "1|a\n2|b", total: 2},
		{name: "empty file", content: "", args: `{"path": %q}`, want: "", total: 0},
		{name: "single newline", content: "\n", args: `{"path": %q}`, want: "1|", total: 1},
		{name: "blank lines kept", content: "a\n\n\nb\n", args: `{"path": %q}`, want: "1|a\n2|\n3|\n4|b", total: 4},
		{name: "nulls take defaults", content: "a\nb\n", args: `{"path": %q, "offset": null, "limit": null}`, want: "1|a\n2|b", total: 2},
		{name: "page in the middle", content: "a\nb\nc\n", args: `{"path": %q, "offset": 2, "limit": 1}`, want: "2|b", total: 3,
			truncated: true, hint: "Use offset=3 to continue reading (showing 2-2 of 3 lines)"},
		{name: "last page", content: "a\nb\nc\n", args: `{"path": %q, "offset": 2, "limit": 5}`, want: "2|b\n3|c", total: 3},
		{name: "offset past end", content: "a\nb\n", args: `{"path": %q, "offset": 10}`, want: "", total: 2, hint: "past the end of the file (2 lines)"},
		{name: "zero offset and limit mean defaults", content: "a\nb\n", args: `{"path": %q, "offset": 0, "limit": 0}`, want: "1|a\n2|b", total: 2},
		{name: "negative offset", content: "a\n", args: `{"path": %q, "offset": -4}`, want: "1|a", total: 1},
		{name: "huge line cut", content: long + "\nz\n", args: `{"path": %q}`,
			want: "1|" + strings.Repeat("x", maxLineChars) + lineTruncMarker + "\n2|z", total: 2},
		{name: "line at the limit kept whole", content: exact + "\n", args: `{"path": %q}`, want: "1|" + exact, total: 1},
		{name: "unicode", content: "héllo 世界 🚀\n", args: `{"path": %q}`, want: "1|héllo 世界 🚀", total: 1},
		{name: "wide line cut by characters", content: wide, args: `{"path": %q}`,
			want: "1|" + strings.Repeat("世", maxLineChars) + lineTruncMarker, total: 1},
		{name: "bom stripped", content: "\uFEFFfirst\nsecond\n", args: `{"path": %q}`, want: "1|first\n2|second", total: 2},
		{name: "rune split by sniff window", content: boundary, args: `{"path": %q, "offset": 82}`,
			want: "82|" + strings.Repeat("a", 91) + strings.Repeat("é", 10), total: 82},
		{name: "limit capped at 2000", content: many.String(), args: `{"path": %q, "limit": 5000}`, total: 2500, truncated: true,
			hint: "Use offset=2001 to continue reading (showing 1-2000 of 2500 lines)"},
		{name: "deep page of a long file", content: many.String(), args: `{"path": %q, "offset": 2499, "limit": 10}`,
			want: "2499|line 2499\n2500|line 2500", total: 2500},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tl, dir := newTestTools(t)
			writeTestFile(t, dir, "f.txt", tc.content)
			res := callJSON(t, tl, "read_file", json.RawMessage(fmt.Sprintf(tc.args, "f.txt")))
			require.NotContains(t, res, "error")
			if tc.want != "" || tc.name == "empty file" || tc.name == "offset past end" {
				assert.Equal(t, tc.want, res["content"])
			}
			assert.Equal(t, float64(tc.total), res["total_lines"])
			assert.Equal(t, float64(len(tc.content)), res["file_size"])
			assert.Equal(t, tc.truncated, res["truncated"])
			if tc.hint == "" {
				assert.NotContains(t, res, "hint")
			} else {
				assert.Contains(t, res["hint"], tc.hint)
			}
		})
	}
}

func TestReadFileLimitCapContent(t *testing.T) {
	tl, dir := newTestTools(t)
	var b strings.Builder
	for i := 1; i <= 2100; i++ {
		fmt.Fprintf(&b, "%d\n", i)
	}
	writeTestFile(t, dir, "n.txt", b.String())
	res := callJSON(t, tl, "read_file", map[string]any{"path": "n.txt", "limit": 9999})
	lines := strings.Split(res["content"].(string), "\n")
	require.Len(t, lines, readMaxLimit)
	assert.Equal(t, "1|1", lines[0])
	assert.Equal(t, "2000|2000", lines[len(lines)-1])
}

func TestReadFileErrors(t *testing.T) {
	tl, dir := newTestTools(t)
	writeTestFile(t, dir, "config.yaml", "a: 1\n")
	writeTestFile(t, dir, "config.yml", "a: 1\n")
	writeTestFile(t, dir, "unrelated.go", "package x\n")
	writeTestFile(t, dir, "sub/notes.txt", "n\n")
	writeTestFile(t, dir, "bin.dat", "abc\x00def")
	writeTestFile(t, dir, "img.png", "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
	writeTestFile(t, dir, "latin1.txt", "caf\xe9\n")
	require.NoError(t, os.Mkdir(filepath.Join(dir, "adir"), 0o755))

	tests := []struct {
		name    string
		args    any
		errHas  []string
		similar []string // exact list when not nil
		simHas  string   // must be the first suggestion
	}{
		{name: "case-different name", args: map[string]any{"path": "Config.yaml"},
			errHas: []string{"File not found: Config.yaml"}, simHas: "config.yaml"},
		{name: "typo", args: map[string]any{"path": "confg.yaml"},
			errHas: []string{"File not found: confg.yaml"}, simHas: "config.yaml"},
		{name: "missing dir suggests nearby", args: map[string]any{"path": "sub/missing/notes.txt"},
			errHas: []string{"File not found: sub/missing/notes.txt"}, simHas: filepath.Join("sub", "notes.txt")},
		{name: "nothing similar", args: map[string]any{"path": "zzzzzzzzqq"},
			errHas: []string{"File not found: zzzzzzzzqq"}, similar: []string{}},
		{name: "directory", args: map[string]any{"path": "adir"}, errHas: []string{"'adir'", "directory", `search_files(pattern="*", target="files", path="adir")`}},
		{name: "binary NUL", args: map[string]any{"path": "bin.dat"}, errHas: []string{"Binary file", "binary data, 7 bytes", "terminal"}},
		{name: "binary png", args: map[string]any{"path": "img.png"}, errHas: []string{"Binary file (PNG image"}},
		{name: "invalid utf-8", args: map[string]any{"path": "latin1.txt"}, errHas: []string{"Binary file"}},
		{name: "missing path", args: map[string]any{}, errHas: []string{"Invalid arguments for read_file: path is required"}},
		{name: "null path", args: map[string]any{"path": nil}, errHas: []string{"Invalid arguments for read_file: path is required"}},
		{name: "wrong type", args: map[string]any{"path": "config.yaml", "offset": "two"}, errHas: []string{"Invalid arguments for read_file:"}},
		{name: "unknown key", args: map[string]any{"path": "config.yaml", "encoding": "utf-8"}, errHas: []string{"Invalid arguments for read_file:", "encoding"}},
		{name: "not an object", args: json.RawMessage(`[1,2]`), errHas: []string{"Invalid arguments for read_file:"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "case-different name" && runtime.GOOS == "windows" {
				// NTFS names are case-insensitive: the file tools open what
				// the OS opens (docs/behaviour.md §11).
				res := callJSON(t, tl, "read_file", tc.args)
				assert.Equal(t, "1|a: 1", res["content"], res["error"])
				return
			}
			res := callJSON(t, tl, "read_file", tc.args)
			require.Contains(t, res, "error")
			for _, s := range tc.errHas {
				assert.Contains(t, res["error"], s)
			}
			assert.NotContains(t, res, "content")
			if tc.similar != nil {
				assert.Equal(t, []any{}, res["similar_files"])
			}
			if tc.simHas != "" {
				sim, ok := res["similar_files"].([]any)
				require.True(t, ok, "similar_files: %v", res["similar_files"])
				require.NotEmpty(t, sim)
				assert.Equal(t, tc.simHas, sim[0])
				assert.LessOrEqual(t, len(sim), maxSimilarFiles)
				assert.NotContains(t, sim, "unrelated.go")
			}
		})
	}
}

func TestReadFileSymlinkAndAbsolute(t *testing.T) {
	tl, dir := newTestTools(t)
	target := writeTestFile(t, dir, "real.txt", "hello\n")
	res := callJSON(t, tl, "read_file", map[string]any{"path": target})
	assert.Equal(t, "1|hello", res["content"], target)
	symlink(t, "real.txt", filepath.Join(dir, "link.txt"))
	for _, p := range []string{"link.txt", filepath.Join(dir, "link.txt")} {
		res := callJSON(t, tl, "read_file", map[string]any{"path": p})
		assert.Equal(t, "1|hello", res["content"], p)
	}
	// A dangling link is reported as not found.
	symlink(t, "gone.txt", filepath.Join(dir, "dangling.txt"))
	res = callJSON(t, tl, "read_file", map[string]any{"path": "dangling.txt"})
	assert.Equal(t, "File not found: dangling.txt", res["error"])
}

func TestReadFileCancelled(t *testing.T) {
	tl, dir := newTestTools(t)
	writeTestFile(t, dir, "big.txt", strings.Repeat("line\n", 20000))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res := tl.Call(ctx, "read_file", json.RawMessage(`{"path": "big.txt"}`))
	assert.Contains(t, res["error"], "context canceled")
}

func TestLineScanner(t *testing.T) {
	tests := []struct {
		name string
		in   string
		max  int
		want []string
		cuts []bool
	}{
		{"empty", "", 10, nil, nil},
		{"lf", "a\nbc\n", 10, []string{"a", "bc"}, []bool{false, false}},
		{"crlf and bare cr", "a\r\nb\rc\n", 10, []string{"a", "b\rc"}, []bool{false, false}},
		{"unterminated", "a\nb", 10, []string{"a", "b"}, []bool{false, false}},
		{"exact max", "abc\n", 3, []string{"abc"}, []bool{false}},
		{"exact max crlf", "abc\r\n", 3, []string{"abc"}, []bool{false}},
		{"one over", "abcd\n", 3, []string{"abc"}, []bool{true}},
		{"two over", "abcde\n", 3, []string{"abc"}, []bool{true}},
		{"far over unterminated", strings.Repeat("z", 200000), 4, []string{"zzzz"}, []bool{true}},
		{"long then short", strings.Repeat("q", 100000) + "\nok\n", 8, []string{"qqqqqqqq", "ok"}, []bool{true, false}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sc := newLineScanner(strings.NewReader(tc.in), tc.max)
			var got []string
			var cuts []bool
			for sc.Scan() {
				got = append(got, string(sc.Bytes()))
				cuts = append(cuts, sc.Cut())
			}
			require.NoError(t, sc.err)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.cuts, cuts)
		})
	}
}

func TestLooksBinary(t *testing.T) {
	tests := []struct {
		name      string
		sample    string
		truncated bool
		want      bool
	}{
		{"empty", "", false, false},
		{"ascii", "hello\n", false, false},
		{"utf8", "héllo 世界", false, false},
		{"nul", "a\x00b", false, true},
		{"latin1", "caf\xe9 au lait", false, true},
		{"cut rune at end of sample", "abc\xe4\xb8", true, false},
		{"cut rune at end of file", "abc\xe4\xb8", false, true},
		{"bad byte before end", "ab\xffcd", true, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, looksBinary([]byte(tc.sample), tc.truncated))
		})
	}
}

func TestNameSimilarity(t *testing.T) {
	assert.Equal(t, 1.0, nameSimilarity("a.go", "a.go"))
	assert.GreaterOrEqual(t, nameSimilarity("config.yaml", "config.yml"), 0.9)
	assert.GreaterOrEqual(t, nameSimilarity("main.go", "main_test.go"), 0.5)
	assert.Less(t, nameSimilarity("readme.md", "zzz.bin"), 0.5)
}

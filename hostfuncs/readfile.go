package hostfuncs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/hermes-agent/hermes-wasm-exec/internal/humanpath"
	"github.com/hermes-agent/hermes-wasm-exec/internal/textdist"
)

const (
	// readDefaultLimit is read_file's default page length in lines.
	readDefaultLimit = 500
	// readMaxLimit caps one page of read_file.
	readMaxLimit = 2000
	// maxLineChars is the longest line read_file returns before cutting it.
	maxLineChars = 2000
	// maxSimilarFiles caps the suggestions of a "File not found" result.
	maxSimilarFiles = 5
	// similarScanLimit caps the directory entries examined for suggestions.
	similarScanLimit = 2000
)

type readFileArgs struct {
	Path   string `json:"path"`
	Offset int    `json:"offset"`
	Limit  int    `json:"limit"`
}

// readFile implements read_file: one page of a text file with 1-indexed
// line numbers ("<n>|<line>"), streamed so that files of any size are read
// in bounded memory. offset < 1 means 1; limit < 1 means 500 and is capped
// at 2000. Credential stores and project env files are refused (see
// checkRead), under any of their names (see linkReadBlock).
func (t *Tools) readFile(ctx context.Context, raw json.RawMessage) result {
	a := readFileArgs{Offset: 1, Limit: readDefaultLimit}
	if r := decodeArgs("read_file", raw, &a); r != nil {
		return r
	}
	if a.Path == "" {
		return result{"error": "Invalid arguments for read_file: path is required"}
	}
	if a.Offset < 1 {
		a.Offset = 1
	}
	if a.Limit < 1 {
		a.Limit = readDefaultLimit
	}
	if a.Limit > readMaxLimit {
		a.Limit = readMaxLimit
	}
	abs := t.resolve(a.Path)
	if msg := t.checkRead(a.Path, abs); msg != "" {
		return result{"error": msg}
	}
	if msg := t.checkWebCacheRead(ctx, a.Path, abs); msg != "" {
		return result{"error": msg}
	}

	info, err := t.fs.Stat(abs)
	if errors.Is(err, fs.ErrNotExist) {
		return result{"error": "File not found: " + a.Path, "similar_files": t.similarFiles(abs)}
	}
	if err != nil {
		return result{"error": fmt.Sprintf("Cannot read '%s': %v", a.Path, unwrapPathError(err))}
	}
	if info.IsDir() {
		return result{"error": fmt.Sprintf("Cannot read '%s': it is a directory. "+
			"List it with search_files(pattern=\"*\", target=\"files\", path=%s) or terminal(\"ls\").", a.Path, humanpath.PyLiteral(a.Path))}
	}
	if !info.Mode().IsRegular() {
		return result{"error": fmt.Sprintf("Cannot read '%s': it is %s, not a regular file, and reading it could block. "+
			"Use terminal if you really need to read it.", a.Path, fileKind(info.Mode()))}
	}

	f, err := t.fs.Open(abs)
	if err != nil {
		return result{"error": fmt.Sprintf("Cannot read '%s': %v", a.Path, unwrapPathError(err))}
	}
	defer f.Close()
	if msg := t.linkReadBlock(abs, info, f); msg != "" {
		return result{"error": msg}
	}

	head, err := readHead(f, sniffSize)
	if err != nil {
		return result{"error": fmt.Sprintf("Cannot read '%s': %v", a.Path, unwrapPathError(err))}
	}
	if looksBinary(head, int64(len(head)) < info.Size()) {
		return result{"error": fmt.Sprintf("Binary file (%s, %s) — cannot display as text. "+
			"Use terminal to inspect it (e.g. file, xxd, or a format-specific converter).",
			describeBinary(head), formatSize(info.Size()))}
	}

	body := io.MultiReader(bytes.NewReader(bytes.TrimPrefix(head, []byte("\uFEFF"))), f)
	content, total, err := readPage(ctx, body, a.Offset, a.Limit)
	if err != nil {
		return result{"error": fmt.Sprintf("Cannot read '%s': %v", a.Path, unwrapPathError(err))}
	}

	end := a.Offset + a.Limit - 1
	res := result{
		"content":     content,
		"total_lines": total,
		"file_size":   info.Size(),
		"truncated":   total > end,
	}
	switch {
	case total > end:
		res["hint"] = fmt.Sprintf("Use offset=%d to continue reading (showing %d-%d of %d lines)",
			end+1, a.Offset, end, total)
	case a.Offset > 1 && a.Offset > total:
		res["hint"] = fmt.Sprintf("Offset %d is past the end of the file (%d lines). Use an offset between 1 and %d.",
			a.Offset, total, max(total, 1))
	}
	return res
}

// readPage streams r and returns lines [offset, offset+limit) rendered as
// "<n>|<line>" joined by newlines, with the stream's total line count.
func readPage(ctx context.Context, r io.Reader, offset, limit int) (string, int, error) {
	sc := newLineScanner(r, maxLineChars*utf8.UTFMax)
	var out strings.Builder
	n := 0
	last := offset + limit - 1
	for n < last && sc.Scan() {
		n++
		if n%4096 == 0 && ctx.Err() != nil {
			return "", 0, ctx.Err()
		}
		if n < offset {
			continue
		}
		if out.Len() > 0 {
			out.WriteByte('\n')
		}
		fmt.Fprintf(&out, "%d|%s", n, clipLine(sc.Bytes(), sc.Cut(), maxLineChars))
	}
	if sc.err != nil {
		return "", 0, sc.err
	}
	rest, err := countLines(ctx, sc.r)
	if err != nil {
		return "", 0, err
	}
	return out.String(), n + rest, nil
}

// countLines counts the lines left in r, which is positioned at a line
// start: its newlines plus an unterminated last line.
func countLines(ctx context.Context, r io.Reader) (int, error) {
	buf := make([]byte, 64<<10)
	n := 0
	var lastByte byte = '\n'
	for {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		got, err := r.Read(buf)
		if got > 0 {
			n += bytes.Count(buf[:got], []byte{'\n'})
			lastByte = buf[got-1]
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, err
		}
	}
	if lastByte != '\n' {
		n++
	}
	return n, nil
}

// unwrapPathError drops the operation and path of a *fs.PathError, which
// the messages already name.
func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// similarFiles suggests up to five existing files whose names resemble the
// missing abs: entries of the nearest existing ancestor directory and of its
// subdirectories, ranked by case-insensitive name similarity.
func (t *Tools) similarFiles(abs string) []string {
	want := strings.ToLower(t.base(abs))
	dir := t.dir(abs)
	for i := 0; i < 3; i++ {
		if fi, err := t.fs.Stat(dir); err == nil && fi.IsDir() {
			break
		}
		parent := t.dir(dir)
		if parent == dir {
			return []string{}
		}
		dir = parent
	}
	type cand struct {
		path  string
		score float64
	}
	var cands []cand
	seen := 0
	consider := func(p, name string) {
		if s := nameSimilarity(want, strings.ToLower(name)); s >= 0.5 {
			cands = append(cands, cand{p, s})
		}
	}
	entries, err := t.fs.ReadDir(dir)
	if err != nil {
		return []string{}
	}
	var subdirs []string
	for _, e := range entries {
		if seen++; seen > similarScanLimit {
			break
		}
		p := t.join(dir, e.Name())
		if e.IsDir() {
			if !strings.HasPrefix(e.Name(), ".") {
				subdirs = append(subdirs, p)
			}
			continue
		}
		consider(p, e.Name())
	}
	for _, sd := range subdirs {
		if seen > similarScanLimit {
			break
		}
		sub, err := t.fs.ReadDir(sd)
		if err != nil {
			continue
		}
		for _, e := range sub {
			if seen++; seen > similarScanLimit {
				break
			}
			if !e.IsDir() {
				consider(t.join(sd, e.Name()), e.Name())
			}
		}
	}
	sort.SliceStable(cands, func(i, j int) bool {
		if cands[i].score != cands[j].score {
			return cands[i].score > cands[j].score
		}
		return cands[i].path < cands[j].path
	})
	out := []string{}
	for i := 0; i < len(cands) && i < maxSimilarFiles; i++ {
		out = append(out, t.displayPath(cands[i].path))
	}
	return out
}

// nameSimilarity scores two lower-cased file names in [0, 1]: 1 for equal
// names, high for a shared stem or containment, else one minus the
// normalised edit distance.
func nameSimilarity(a, b string) float64 {
	if a == b {
		return 1
	}
	stem := func(s string) string { return strings.TrimSuffix(s, filepath.Ext(s)) }
	score := 0.0
	if sa, sb := stem(a), stem(b); sa != "" && sa == sb {
		score = 0.9
	} else if len(a) >= 3 && len(b) >= 3 && (strings.Contains(a, b) || strings.Contains(b, a)) {
		score = 0.8
	}
	na, nb := utf8.RuneCountInString(a), utf8.RuneCountInString(b)
	if na > 256 || nb > 256 {
		return score
	}
	d := textdist.Distance(a, b)
	if r := 1 - float64(d)/float64(max(na, nb)); r > score {
		score = r
	}
	return score
}

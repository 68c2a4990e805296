package hostfuncs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"regexp"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/hermes-agent/hermes-wasm-exec/internal/backend"
)

const (
	// searchDefaultLimit is search_files' default page length.
	searchDefaultLimit = 50
	// searchMaxLimit caps one page of search_files.
	searchMaxLimit = 1000
	// searchMaxContext caps the context lines around a match.
	searchMaxContext = 20
	// searchMaxFileSize skips larger files in content searches.
	searchMaxFileSize = 5 << 20
	// searchMaxLineBytes is how much of one line is matched against.
	searchMaxLineBytes = 256 << 10
	// searchMaxLineChars cuts the content of a reported line.
	searchMaxLineChars = 500
	// searchMaxCounted stops a search once this many results are counted,
	// so a pattern matching everything cannot scan forever.
	searchMaxCounted = 20000
)

// errStopWalk ends a walk early without an error.
var errStopWalk = errors.New("stop walk")

type searchFilesArgs struct {
	Pattern    string  `json:"pattern"`
	Target     string  `json:"target"`
	Path       string  `json:"path"`
	FileGlob   *string `json:"file_glob"`
	Limit      int     `json:"limit"`
	Offset     int     `json:"offset"`
	OutputMode string  `json:"output_mode"`
	Context    int     `json:"context"`
}

// searchFiles implements search_files. target "content" greps files for
// the regular expression pattern (Go RE2 syntax); target "files" lists
// files whose base name matches the glob pattern (a pattern without
// wildcards matches names containing it). The walk is sorted, respects
// .gitignore files, skips hidden entries, symlinks, binary files and, for
// content, files over 5 MB. Results are paged with offset and limit.
func (t *Tools) searchFiles(ctx context.Context, raw json.RawMessage) result {
	a := searchFilesArgs{Target: "content", Path: ".", Limit: searchDefaultLimit, OutputMode: "content"}
	if r := decodeArgs("search_files", raw, &a); r != nil {
		return r
	}
	bad := func(format string, v ...any) result {
		return result{"error": "Invalid arguments for search_files: " + fmt.Sprintf(format, v...)}
	}
	if a.Pattern == "" {
		return bad("pattern is required")
	}
	if a.Target == "" {
		a.Target = "content"
	}
	if a.OutputMode == "" {
		a.OutputMode = "content"
	}
	if a.Path == "" {
		a.Path = "."
	}
	if a.Target != "content" && a.Target != "files" {
		return bad("target must be \"content\" or \"files\", got %q", a.Target)
	}
	if a.OutputMode != "content" && a.OutputMode != "files_only" && a.OutputMode != "count" {
		return bad("output_mode must be \"content\", \"files_only\" or \"count\", got %q", a.OutputMode)
	}
	if a.Limit < 1 {
		a.Limit = searchDefaultLimit
	}
	a.Limit = min(a.Limit, searchMaxLimit)
	a.Offset = max(a.Offset, 0)
	a.Context = min(max(a.Context, 0), searchMaxContext)

	s := &searcher{ctx: ctx, t: t, args: a}
	if a.FileGlob != nil && *a.FileGlob != "" {
		if !doublestar.ValidatePattern(*a.FileGlob) {
			return bad("file_glob %q is not a valid glob", *a.FileGlob)
		}
		s.fileGlob = *a.FileGlob
	}
	if a.Target == "files" {
		g := a.Pattern
		if !strings.ContainsAny(g, "*?[{") {
			g = "*" + g + "*"
		}
		if !doublestar.ValidatePattern(g) {
			return bad("pattern %q is not a valid glob", a.Pattern)
		}
		s.nameGlob = g
	} else {
		re, err := regexp.Compile(a.Pattern)
		if err != nil {
			return result{"error": fmt.Sprintf("Invalid regex pattern %q: %v", a.Pattern, err)}
		}
		s.re = re
	}

	root := t.resolve(a.Path)
	rootReal := t.realOrSelf(root)
	if msg := t.confined("Search", a.Path, rootReal); msg != "" {
		return result{"error": msg}
	}
	// The walk enters no dot dir (a Hermes home is one): the policy of the
	// root's paths covers every file it visits.
	s.policy = t.policy(rootReal, root)
	if msg := s.policy.readBlock(rootReal, t.base(root)); msg != "" {
		return result{"error": msg}
	}
	info, err := t.fs.Stat(root)
	if errors.Is(err, fs.ErrNotExist) {
		return result{"error": "Path not found: " + a.Path}
	}
	if err != nil {
		return result{"error": fmt.Sprintf("Cannot search '%s': %v", a.Path, unwrapPathError(err))}
	}
	s.root, s.rootReal = root, rootReal

	if info.IsDir() {
		err = s.walkRoot()
	} else if info.Mode().IsRegular() {
		err = s.visit(root, t.base(root))
	} else {
		return result{"error": fmt.Sprintf("Cannot search '%s': it is %s", a.Path, fileKind(info.Mode()))}
	}
	if errors.Is(err, errStopWalk) {
		err = nil
	}
	if err != nil {
		if ctx.Err() != nil {
			return result{"error": fmt.Sprintf("Search cancelled: %v", ctx.Err())}
		}
		return result{"error": fmt.Sprintf("Search failed: %v", err)}
	}
	return s.result()
}

// searcher holds the state of one search_files call. Only the requested
// page of results is kept; everything else is just counted.
type searcher struct {
	ctx      context.Context
	t        *Tools
	args     searchFilesArgs
	root     string
	rootReal string // root with symlinks resolved
	policy   safetyPolicy
	re       *regexp.Regexp
	nameGlob string
	fileGlob string

	total   int // matching lines (content/count) or files (files/files_only)
	omitted int // files skipped because read_file would refuse them
	nFiles  int // files with matches (count mode)
	capped  bool
	matches []map[string]any
	files   []string
	counts  map[string]int
}

// inPage reports whether result number i (0-based) is on the requested page.
func (s *searcher) inPage(i int) bool {
	return i >= s.args.Offset && i < s.args.Offset+s.args.Limit
}

// walkRoot walks the search root, seeding the .gitignore chain with the
// files of its ancestors up to the repository (or working dir) top.
func (s *searcher) walkRoot() error {
	t := s.t
	top := ignoreTopIn(t.fs, t.px, s.root, t.workdir)
	var stack ignoreStack
	relRoot := ""
	if top != s.root {
		// Without a relative path from top, the root's own .gitignore
		// files are all there is.
		if r, err := t.px.rel(top, s.root); err == nil {
			relRoot = t.px.toSlash(r)
			dir, rel := top, ""
			for _, part := range strings.Split(relRoot, "/") {
				stack = stack.push(t.loadGitignore(dir, rel))
				dir = t.join(dir, part)
				rel = joinRel(rel, part)
			}
		}
	}
	return s.walk(s.root, relRoot, "", stack)
}

// walk visits the directory abs: rel is its slash path relative to the
// ignore top, srel relative to the search root.
func (s *searcher) walk(abs, rel, srel string, stack ignoreStack) error {
	if err := s.ctx.Err(); err != nil {
		return err
	}
	stack = stack.push(s.t.loadGitignore(abs, rel))
	entries, err := s.t.fs.ReadDir(abs)
	if err != nil {
		if abs == s.root {
			return unwrapPathError(err)
		}
		return nil // unreadable subdirectory: skip it, like rg
	}
	for _, e := range entries {
		name := e.Name()
		// No link is followed: neither a symlink nor a Windows junction
		// (a directory Go reports as irregular), which could lead out of
		// the root, or round in a loop.
		if strings.HasPrefix(name, ".") || e.Type()&fs.ModeSymlink != 0 || e.IsDir() && e.Type()&fs.ModeIrregular != 0 {
			continue
		}
		childRel, childSrel := joinRel(rel, name), joinRel(srel, name)
		isDir := e.IsDir()
		if stack.match(childRel, isDir) {
			continue
		}
		child := s.t.join(abs, name)
		if isDir {
			if err := s.walk(child, childRel, childSrel, stack); err != nil {
				return err
			}
			continue
		}
		if !e.Type().IsRegular() {
			continue
		}
		if err := s.visit(child, childSrel); err != nil {
			return err
		}
	}
	return nil
}

// visit handles one regular file; srel is its slash path relative to the
// search root.
func (s *searcher) visit(abs, srel string) error {
	if err := s.ctx.Err(); err != nil {
		return err
	}
	if s.fileGlob != "" && !globMatch(s.fileGlob, srel) {
		return nil
	}
	if s.re == nil && !globMatch(s.nameGlob, srel) {
		return nil
	}
	// What read_file refuses, search neither lists nor reads (a match
	// alone would leak a secret bit by bit). The walk follows no symlink,
	// so the file's real path is the root's plus the rest.
	if s.policy.readBlock(s.rootReal+strings.TrimPrefix(abs, s.root), s.t.base(abs)) != "" {
		s.omitted++
		return nil
	}
	if s.re == nil {
		if s.inPage(s.total) {
			s.files = append(s.files, s.t.displayPath(abs))
		}
		s.total++
		return s.checkCap()
	}
	if err := s.grep(abs); err != nil {
		return err
	}
	return s.checkCap()
}

// checkCap stops the walk once searchMaxCounted results are counted.
func (s *searcher) checkCap() error {
	if s.total >= searchMaxCounted {
		s.capped = true
		return errStopWalk
	}
	return nil
}

// globMatch matches a glob against a file's base name, or against its path
// relative to the search root when the glob holds a slash.
func globMatch(glob, srel string) bool {
	if strings.Contains(glob, "/") {
		return doublestar.MatchUnvalidated(glob, srel)
	}
	return doublestar.MatchUnvalidated(glob, srel[strings.LastIndexByte(srel, '/')+1:])
}

// ctxLine is a line remembered as possible leading context.
type ctxLine struct {
	n    int
	text string
}

// grep searches one file for s.re, skipping binary and oversized files.
func (s *searcher) grep(abs string) error {
	f, err := s.t.fs.Open(abs)
	if err != nil {
		return nil // unreadable: skip
	}
	defer f.Close()
	var fi fs.FileInfo
	if st, ok := f.(interface{ Stat() (fs.FileInfo, error) }); ok {
		fi, err = st.Stat() // an *os.File: the file opened
	} else {
		fi, err = s.t.fs.Stat(abs)
	}
	if err != nil || fi.Size() > searchMaxFileSize {
		return nil
	}
	// A hard link to a file read_file refuses is refused by its identity
	// (its name tells nothing; hardlink.go).
	if s.t.linkReadBlock(abs, fi, f) != "" {
		s.omitted++
		return nil
	}
	head, err := readHead(f, sniffSize)
	if err != nil {
		return nil
	}
	if looksBinary(head, len(head) == sniffSize) {
		return nil
	}
	body := io.MultiReader(strings.NewReader(strings.TrimPrefix(string(head), "\uFEFF")), f)
	sc := newLineScanner(body, searchMaxLineBytes)

	display := s.t.displayPath(abs)
	mode := s.args.OutputMode
	nctx := s.args.Context
	var before []ctxLine
	lastEmitted, afterLeft, fileMatches := 0, 0, 0
	emit := func(n int, text string, isContext bool) {
		m := map[string]any{"path": display, "line": n, "content": text}
		if isContext {
			m["context"] = true
		}
		s.matches = append(s.matches, m)
		lastEmitted = n
	}
	for n := 1; sc.Scan(); n++ {
		if n%1024 == 0 {
			if err := s.ctx.Err(); err != nil {
				return err
			}
		}
		line := sc.Bytes()
		if s.re.Match(line) {
			fileMatches++
			if mode == "files_only" {
				break
			}
			idx := s.total
			s.total++
			if mode == "content" && s.inPage(idx) {
				for _, c := range before {
					if c.n > lastEmitted {
						emit(c.n, c.text, true)
					}
				}
				before = before[:0]
				emit(n, clipLine(line, sc.Cut(), searchMaxLineChars), false)
				afterLeft = nctx
				continue
			}
			if s.total >= searchMaxCounted {
				break
			}
		}
		if mode != "content" || nctx == 0 {
			continue
		}
		text := clipLine(line, sc.Cut(), searchMaxLineChars)
		if afterLeft > 0 && n > lastEmitted {
			emit(n, text, true)
			afterLeft--
			continue
		}
		if len(before) == nctx {
			copy(before, before[1:])
			before = before[:nctx-1]
		}
		before = append(before, ctxLine{n, text})
	}
	if sc.err != nil {
		return nil
	}
	if fileMatches == 0 {
		return nil
	}
	switch mode {
	case "files_only":
		if s.inPage(s.total) {
			s.files = append(s.files, display)
		}
		s.total++
	case "count":
		if s.inPage(s.nFiles) {
			if s.counts == nil {
				s.counts = map[string]int{}
			}
			s.counts[display] = fileMatches
		}
		s.nFiles++
	}
	return nil
}

// result builds the search_files answer from the collected page.
func (s *searcher) result() result {
	res := result{"total_count": s.total}
	paged, unit := s.total, "results"
	switch {
	case s.re == nil || s.args.OutputMode == "files_only":
		if s.files == nil {
			s.files = []string{}
		}
		res["files"] = s.files
		unit = "files"
	case s.args.OutputMode == "count":
		if s.counts == nil {
			s.counts = map[string]int{}
		}
		res["counts"] = s.counts
		paged, unit = s.nFiles, "files with matches"
	default:
		if s.matches == nil {
			s.matches = []map[string]any{}
		}
		res["matches"] = s.matches
		unit = "matches"
	}
	off, lim := s.args.Offset, s.args.Limit
	more := paged > off+lim || s.capped
	res["truncated"] = more
	var hint string
	switch {
	case more:
		hint = fmt.Sprintf("Showing %s %d-%d of %d. Use offset=%d to see more.",
			unit, off+1, min(off+lim, paged), paged, off+lim)
	case off > 0 && off >= paged && paged > 0:
		hint = fmt.Sprintf("Offset %d is past the end of the %s (%d in total). Use a smaller offset.", off, unit, paged)
	}
	if s.capped {
		hint += fmt.Sprintf(" The search stopped after %d results, so total_count is a lower bound: narrow the pattern, path or file_glob.", searchMaxCounted)
	}
	if hint != "" {
		res["hint"] = strings.TrimSpace(hint)
	}
	if s.omitted > 0 {
		res["_omitted"] = fmt.Sprintf("%d file(s) omitted because they are credential, token, cache, "+
			"or secret-bearing environment files.", s.omitted)
	}
	return res
}

// ignoreTop is ignoreTopIn on this host.
func ignoreTop(root, workdir string) string {
	return ignoreTopIn(backend.LocalFS, pathSyntax{}, root, workdir)
}

// ignoreTopIn picks the directory whose .gitignore files govern a search
// of root (in fsys, paths of syntax px): the enclosing git repository's top
// when there is one, else the working dir when root lies inside it, else
// root itself.
func ignoreTopIn(fsys backend.FS, px pathSyntax, root, workdir string) string {
	for dir := root; ; {
		if _, err := fsys.Lstat(px.join(dir, ".git")); err == nil {
			return dir
		}
		parent := px.dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	if rel, err := px.rel(workdir, root); err == nil && !px.outside(rel) {
		return workdir
	}
	return root
}

// loadGitignore parses dir/.gitignore, whose slash path relative to the
// ignore top is rel; nil when there is none.
func (t *Tools) loadGitignore(dir, rel string) *gitignore {
	data, err := t.fs.ReadFile(t.join(dir, ".gitignore"))
	if err != nil || len(data) > 1<<20 {
		return nil
	}
	return parseGitignore(rel, data)
}

// joinRel joins slash-separated relative paths, "" being the top.
func joinRel(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

package cmdcheck

import (
	"strings"
)

// This file is the cmd.exe dialect: the command line is read the way
// cmd.exe reads it (cmd /d /s /c LINE on a Windows host without Git Bash),
// and every command it would run is held against the Windows rules
// (rules_win.go) and, for the programs both systems have (git, rm,
// curl | sh, ...), against the POSIX rules.
//
// What cmd.exe does that is read here: the separators & && || | and
// newlines, ( ) blocks (if ... ( ... ) else ( ... ), for ... do ...),
// ^ escapes and "..." quoting, redirections (>, 2>&1, <), @ before a
// command, a command name spelled with a path, another case, quotes or
// an extension (C:\Windows\System32\CMD.EXE, "rd", rd.exe), a switch
// written against the name (rd/s), and , ; as argument separators. A
// %VAR% or !VAR! is only known at run time: as the name of a command it
// is flagged, as an argument of a program with rules it is flagged too.
// Code that one command runs is read again: cmd /c and /k, start, call,
// runas, for /f ('command'), powershell and pwsh -Command (in the
// PowerShell reading of powershell.go; -EncodedCommand is flagged, it
// cannot be read), bash/sh -c and wsl (in the POSIX reading).
//
// Like the POSIX reading this is defence in depth: a batch file or
// script run by name, or what a program does on its own, is not seen.

// ctok is a token of a cmd.exe line: a word, or an operator (& && || |
// ( )).
type ctok struct {
	op   string // the operator; "" for a word
	word carg
	// start and end are the token's byte offsets in the line.
	start, end int
}

// carg is a word of a cmd.exe line.
type carg struct {
	text string // quotes and ^ escapes removed
	raw  string // ^ escapes removed, quotes kept (what a program is passed)
	// runtime: it holds a %VAR% or !VAR! expanded only when it runs.
	runtime bool
}

// cmdSpace reports whether b separates words in cmd.exe (, ; = are
// separators too; = is kept in words here so that if a==b reads).
func cmdSpace(b byte) bool {
	switch b {
	case ' ', '\t', ',', ';', '\v', '\f', '\r', 0xff:
		return true
	}
	return false
}

// cmdTokens splits a cmd.exe line into words and operators. Redirections
// and their targets are dropped. It reads any input: an unclosed quote
// runs to the end of the line, as in cmd.exe.
func cmdTokens(src string) []ctok {
	var toks []ctok
	for i := 0; i < len(src); {
		b := src[i]
		switch {
		case cmdSpace(b):
			i++
		case b == '\n':
			// cmd /c reads one line; a newline is taken as a separator
			// so that every line is checked.
			toks = append(toks, ctok{op: "&", start: i, end: i + 1})
			i++
		case b == '&' || b == '|':
			n := 1
			if i+1 < len(src) && src[i+1] == b {
				n = 2
			}
			toks = append(toks, ctok{op: src[i : i+n], start: i, end: i + n})
			i += n
		case b == '(' || b == ')':
			toks = append(toks, ctok{op: src[i : i+1], start: i, end: i + 1})
			i++
		case b == '<' || b == '>':
			i = skipRedirect(src, i)
		default:
			w, j := readCmdWord(src, i)
			// 2>x: a handle number before a redirection is not a word.
			if j < len(src) && (src[j] == '>' || src[j] == '<') && len(w.raw) == 1 && w.raw[0] >= '0' && w.raw[0] <= '9' {
				i = j
				continue
			}
			toks = append(toks, ctok{word: w, start: i, end: j})
			i = j
		}
	}
	return toks
}

// skipRedirect skips a redirection at src[i] (>, >>, <, >&2, <&0) and
// its target word.
func skipRedirect(src string, i int) int {
	i++
	if i < len(src) && src[i] == '>' {
		i++
	}
	if i < len(src) && src[i] == '&' {
		i++
		for i < len(src) && src[i] >= '0' && src[i] <= '9' {
			i++
		}
		return i
	}
	for i < len(src) && cmdSpace(src[i]) {
		i++
	}
	if i < len(src) && strings.IndexByte("&|()<>\n", src[i]) < 0 {
		_, i = readCmdWord(src, i)
	}
	return i
}

// readCmdWord reads the word at src[i]; it returns it and the offset after it.
func readCmdWord(src string, i int) (carg, int) {
	var text, raw strings.Builder
	w := carg{}
	quoted := false
	for ; i < len(src); i++ {
		b := src[i]
		if b == '\n' {
			break
		}
		if quoted {
			raw.WriteByte(b)
			if b == '"' {
				quoted = false
				continue
			}
			if b == '%' || b == '!' {
				w.runtime = w.runtime || expands(src, i)
			}
			text.WriteByte(b)
			continue
		}
		switch {
		case b == '"':
			quoted = true
			raw.WriteByte(b)
			continue
		case b == '^':
			i++
			if i < len(src) {
				if src[i] == '\n' { // line continuation
					continue
				}
				text.WriteByte(src[i])
				raw.WriteByte(src[i])
			}
			continue
		case cmdSpace(b) || strings.IndexByte("&|()<>", b) >= 0:
			w.text, w.raw = text.String(), raw.String()
			return w, i
		case b == '%' || b == '!':
			w.runtime = w.runtime || expands(src, i)
		}
		text.WriteByte(b)
		raw.WriteByte(b)
	}
	w.text, w.raw = text.String(), raw.String()
	return w, i
}

// expands reports whether the % or ! at src[i] starts something expanded
// when the line runs: %VAR%, %1, %~dp0, a for variable %i, !VAR!.
func expands(src string, i int) bool {
	if i+1 >= len(src) {
		return false
	}
	next := src[i+1]
	if src[i] == '!' {
		return strings.IndexByte(src[i+1:], '!') > 0
	}
	return next != ' ' && next != '\t' && next != '"'
}

// checkCmd reads src as a cmd.exe line at nesting depth and holds every
// command in it against the rules.
func (c *checker) checkCmd(src string, depth int) {
	if !c.enter(src, depth, Cmd, "") {
		return
	}
	p := &cmdParser{c: c, src: src, toks: cmdTokens(src), depth: depth}
	p.parse()
}

// cmdParser walks the tokens of one cmd.exe line.
type cmdParser struct {
	c     *checker
	src   string
	toks  []ctok
	depth int

	blocks int      // open ( blocks
	cur    []carg   // the words of the command being read
	pipe   [][]carg // the stages of the pipeline being read
}

func (p *cmdParser) parse() {
	for i := 0; i < len(p.toks); i++ {
		t := p.toks[i]
		if t.op != "" {
			switch t.op {
			case "(":
				if len(p.cur) == 0 {
					p.blocks++
					continue
				}
				p.cur = append(p.cur, carg{text: "(", raw: "("})
			case ")":
				if p.blocks > 0 {
					p.blocks--
					p.endPipeline()
					continue
				}
				p.cur = append(p.cur, carg{text: ")", raw: ")"})
			case "|":
				p.endCommand()
			default: // & && ||
				p.endPipeline()
			}
			continue
		}
		w := t.word
		if len(p.cur) == 0 {
			// @ before a command hides its echo.
			w.text = strings.TrimLeft(w.text, "@")
			w.raw = strings.TrimLeft(w.raw, "@")
			if w.text == "" && w.raw == "" {
				continue
			}
			switch strings.ToLower(w.text) {
			case "if":
				i = p.ifCondition(i+1) - 1
				continue
			case "else":
				continue
			case "for":
				i = p.forHead(i + 1)
				continue
			}
		}
		p.cur = append(p.cur, w)
	}
	p.endPipeline()
}

// word returns the text of token i in lower case, "" for an operator or
// past the end.
func (p *cmdParser) word(i int) string {
	if i >= len(p.toks) || p.toks[i].op != "" {
		return ""
	}
	return strings.ToLower(p.toks[i].word.text)
}

// ifCondition skips the condition of an if that starts at token i and
// returns the token where its command starts.
func (p *cmdParser) ifCondition(i int) int {
	if p.word(i) == "/i" {
		i++
	}
	if p.word(i) == "not" {
		i++
	}
	switch w := p.word(i); {
	case w == "exist" || w == "defined" || w == "errorlevel" || w == "cmdextversion":
		return i + 2
	case strings.Contains(w, "=="):
		if strings.HasSuffix(w, "==") {
			return i + 2
		}
		return i + 1
	}
	i++
	switch op := p.word(i); {
	case op == "==":
		return i + 2
	case strings.HasPrefix(op, "=="):
		return i + 1
	case op == "equ" || op == "neq" || op == "lss" || op == "leq" || op == "gtr" || op == "geq":
		return i + 2
	}
	return i
}

// forHead reads the head of a for that starts at token i (for /f ...
// %i in (set) do) and returns the token of the do; the command after it
// is read as any other. The set of for /f runs as a command when it is
// in single quotes (backquotes with usebackq).
func (p *cmdParser) forHead(i int) int {
	slashF := false
	for ; i < len(p.toks); i++ {
		switch w := p.word(i); {
		case w == "/f":
			slashF = true
		case w == "do":
			return i
		case w == "in" && i+1 < len(p.toks) && p.toks[i+1].op == "(":
			open := p.toks[i+1]
			end := i + 2
			for end < len(p.toks) && p.toks[end].op != ")" {
				end++
			}
			closeAt := len(p.src)
			if end < len(p.toks) {
				closeAt = p.toks[end].start
			}
			set := strings.TrimSpace(p.src[open.end:closeAt])
			if slashF && len(set) > 1 && (set[0] == '\'' || set[0] == '`') {
				p.c.checkCmd(strings.Trim(set, "'`"), p.depth+1)
			}
			i = end
		}
	}
	return i
}

func (p *cmdParser) endCommand() {
	if len(p.cur) > 0 {
		p.pipe = append(p.pipe, p.cur)
	}
	p.cur = nil
}

func (p *cmdParser) endPipeline() {
	p.endCommand()
	if len(p.pipe) == 0 {
		return
	}
	w := &win{c: p.c, depth: p.depth, fed: p.c.stdinFed && p.depth == 0}
	w.pipeline(p.pipe)
	p.pipe = nil
}

// win holds the commands of one line of cmd.exe or PowerShell against the
// rules.
type win struct {
	c     *checker
	depth int
	// fed: the first stage reads the input the caller gives the line (see
	// CheckShellInput), as from a pipe.
	fed bool
	// psAliases are the aliases PowerShell code defines (Set-Alias):
	// lower-case name to the commands it may run; psAliasDepth bounds a
	// chain of them.
	psAliases    map[string][]string
	psAliasDepth int
}

func (w *win) add(reason string) { w.c.add(reason) }

// stageInput is what a pipeline stage reads on stdin.
type stageInput struct {
	piped    bool // an earlier stage writes to it
	download bool // an earlier stage downloads
}

// pipeline checks the stages of a pipeline, and reads it again as a POSIX
// line for the rules of the programs both systems have.
func (w *win) pipeline(stages [][]carg) {
	in := stageInput{piped: w.fed}
	var sh []string
	if w.fed {
		sh = append(sh, "cat")
	}
	for _, st := range stages {
		name, args := splitName(st)
		w.command(name, args, in)
		sh = append(sh, shStage(name, args))
		in.piped = true
		in.download = in.download || downloaders[name] || psDownloads[name] || name == "bitsadmin" || name == "certutil"
	}
	w.c.check(strings.Join(sh, " | "), w.depth)
}

// splitName reads the name of a command: a switch written against it
// (rd/s, cmd/c) is its first argument, the name loses its path, case and
// a .exe/.com/.bat/.cmd extension. A name only known at run time is
// returned as "$".
func splitName(words []carg) (string, []carg) {
	first, args := words[0], words[1:]
	if first.runtime {
		return "$", args
	}
	text := first.text
	if i := strings.IndexAny(text, "/+="); i > 0 && !strings.ContainsAny(text[:i], `\:`) {
		rest := carg{text: text[i:], raw: text[i:]}
		args = append([]carg{rest}, args...)
		text = text[:i]
	}
	return winName(text), args
}

// winName is the base name of a Windows program, lower-case, without a
// path or a .exe, .com, .bat or .cmd extension.
func winName(text string) string {
	name := strings.ToLower(strings.TrimSpace(text))
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		name = name[i+1:]
	}
	for _, ext := range []string{".exe", ".com", ".bat", ".cmd"} {
		name = strings.TrimSuffix(name, ext)
	}
	return name
}

// shStage is a stage of a cmd.exe pipeline as a POSIX command, for the
// rules of the programs both systems have (git push --force, rm -rf,
// curl | sh): their words single-quoted, a word only known at run time as
// "$V". Other programs keep only their name, so that the POSIX rules do
// not read Windows switches (rmdir /s, move /y, find /i) as paths.
func shStage(name string, args []carg) string {
	if name == "$" {
		return `"$V"`
	}
	if windowsNames[name] {
		return ":"
	}
	words := []string{shQuote(name)}
	if _, ok := rules[family(name)]; ok {
		for _, a := range args {
			if a.runtime {
				words = append(words, `"$V"`)
			} else {
				words = append(words, shQuote(a.text))
			}
		}
	}
	return strings.Join(words, " ")
}

// windowsNames are programs the POSIX rules know under a name that is a
// different program, or has different switches, on Windows: the POSIX
// reading sees only a stage of the pipeline there (":").
var windowsNames = map[string]bool{
	"find": true, "rmdir": true, "shutdown": true, "pwsh": true, "sort": true, "timeout": true,
	"tee": true,
}

func shQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// command checks one command of a cmd.exe line (or a program PowerShell
// starts): name as splitName gives it.
func (w *win) command(name string, args []carg, in stageInput) {
	switch {
	case name == "$":
		w.add(reasonDynamic)
		return
	case name == "" || strings.HasPrefix(name, ":"): // a label or :: comment
		return
	}
	if r := winRules[name]; r != nil {
		for _, a := range args {
			if winWrappers[name] {
				break // what they run is checked itself
			}
			if a.runtime {
				w.add(reasonDynamicArgs(name))
				break
			}
		}
		r(w, args, in)
	}
}

// winWrappers run code or a command given in their arguments, which is
// checked itself: an argument only known at run time is flagged there.
var winWrappers = map[string]bool{
	"cmd": true, "start": true, "call": true, "runas": true, "sudo": true, "psexec": true, "psexec64": true,
	"wsl": true, "powershell": true, "pwsh": true, "powershell_ise": true,
}

// rest starts the command in args (call, start, sudo run their arguments).
func (w *win) rest(args []carg, in stageInput) {
	if len(args) == 0 {
		return
	}
	name, more := splitName(args)
	w.command(name, more, in)
	w.c.check(shStage(name, more), w.depth)
}

// rawLine joins the words as a program is passed them.
func rawLine(args []carg) string {
	var b strings.Builder
	for i, a := range args {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(a.raw)
	}
	return b.String()
}

// cmdRule: cmd /c LINE and /k LINE run LINE (with /s, and in most cases
// without, cmd takes off its first and last quote); cmd without either
// reads commands on stdin.
func cmdRule(w *win, args []carg, in stageInput) {
	for i, a := range args {
		l := lowerASCII(a.raw) // indexes a.raw
		if !strings.HasPrefix(l, "/") {
			break
		}
		at := -1
		for _, sw := range []string{"/c", "/k", "/r"} {
			if j := strings.Index(l, sw); j >= 0 && (at < 0 || j < at) {
				at = j
			}
		}
		if at < 0 {
			continue
		}
		code := strings.TrimSpace(a.raw[at+2:] + " " + rawLine(args[i+1:]))
		if !strings.HasPrefix(code, `"`) {
			w.c.checkCmd(code, w.depth+1)
			return
		}
		// Whether cmd takes the quotes off depends on /s and on what is
		// between them: when they are not one pair around it all
		// ("a b" c "d"), both readings are checked.
		if strings.IndexByte(code[1:], '"') != len(code)-2 {
			w.c.checkCmd(code, w.depth+1)
		}
		code = code[1:]
		if j := strings.LastIndexByte(code, '"'); j >= 0 {
			code = code[:j] + code[j+1:]
		}
		w.c.checkCmd(code, w.depth+1)
		return
	}
	stdinCode(w, in)
}

// lowerASCII lower-cases the ASCII letters of s only, so that offsets in
// it are offsets in s (strings.ToLower rewrites invalid UTF-8).
func lowerASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// stdinCode flags a shell that reads its commands on stdin from a pipe.
func stdinCode(w *win, in stageInput) {
	switch {
	case in.download:
		w.add(reasonRemoteScript)
	case in.piped:
		w.add(reasonStdinCode)
	}
}

// startRule: start ["title"] [/switches] program args.
func startRule(w *win, args []carg, in stageInput) {
	if len(args) > 0 && strings.HasPrefix(args[0].raw, `"`) {
		args = args[1:]
	}
	for len(args) > 0 && strings.HasPrefix(args[0].text, "/") {
		switch strings.ToLower(args[0].text) {
		case "/d", "/node", "/affinity", "/machine":
			args = args[min(1, len(args)-1):]
		}
		args = args[1:]
	}
	w.rest(args, stageInput{})
}

// callRule: call runs its arguments as a command (or a batch label).
func callRule(w *win, args []carg, in stageInput) {
	w.rest(args, in)
}

// runasRule: runas /user:X "command line".
func runasRule(w *win, args []carg, in stageInput) {
	w.add(reasonPrivilege)
	for i := len(args) - 1; i >= 0; i-- {
		if !strings.HasPrefix(args[i].text, "/") {
			w.c.checkCmd(args[i].text, w.depth+1)
			return
		}
	}
}

// sudoRule: Windows' sudo (and psexec) run a command as another user.
func sudoRule(w *win, args []carg, in stageInput) {
	w.add(reasonPrivilege)
	for len(args) > 0 && (strings.HasPrefix(args[0].text, "-") || strings.HasPrefix(args[0].text, "/")) {
		args = args[1:]
	}
	w.rest(args, in)
}

// wslRule: wsl [options] [--exec|-e|--] command runs a command in Linux:
// it is read as a POSIX line.
func wslRule(w *win, args []carg, in stageInput) {
options:
	for len(args) > 0 {
		a := strings.ToLower(args[0].text)
		switch {
		case a == "-u" || a == "--user":
			if len(args) > 1 && strings.EqualFold(args[1].text, "root") {
				w.add(reasonPrivilege)
			}
			args = args[min(2, len(args)):]
		case a == "-d" || a == "--distribution" || a == "--cd" || a == "--shell-type":
			args = args[min(2, len(args)):]
		case a == "-e" || a == "--exec" || a == "--":
			args = args[1:]
			break options
		case strings.HasPrefix(a, "-"):
			args = args[1:]
		default:
			break options
		}
	}
	if len(args) == 0 {
		stdinCode(w, in)
		return
	}
	var words []string
	for _, a := range args {
		if a.runtime {
			words = append(words, `"$V"`)
		} else {
			words = append(words, a.raw)
		}
	}
	w.c.check(strings.Join(words, " "), w.depth+1)
}

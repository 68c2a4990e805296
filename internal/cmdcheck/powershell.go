package cmdcheck

import (
	"slices"
	"strings"
)

// This file reads the code of powershell/pwsh -Command: a small reader of
// PowerShell statements (; | && || newlines, { } ( ) blocks, '...' and
// "..." strings, ` escapes, # comments) whose commands are held against
// PowerShell's own rules (Remove-Item -Recurse and its aliases ri, rm,
// del, erase, rd, rmdir; Format-Volume; Stop-Computer; Invoke-Expression
// of a download; ...) and, for the programs it starts, the cmd.exe and
// POSIX rules. $variables make a word only known at run time; a command
// called through one (& $x) is flagged. Like the rest, defence in depth.

// psDownloads are the PowerShell commands that fetch from the network.
var psDownloads = map[string]bool{
	"iwr": true, "irm": true, "invoke-webrequest": true, "invoke-restmethod": true,
	"start-bitstransfer": true, "curl": true, "wget": true,
}

// powershellRule reads powershell's and pwsh's options: -Command (or
// what follows the options) is PowerShell code; -EncodedCommand cannot be
// read; -Command - reads code on stdin; -File runs a script not seen here.
func powershellRule(w *win, args []carg, in stageInput) {
	for i := 0; i < len(args); i++ {
		a := lowerASCII(args[i].text)
		if !strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "/") {
			psCode(w, args[i:], in)
			return
		}
		name, value, hasValue := strings.Cut(a[1:], ":")
		switch {
		case name == "":
			psCode(w, args[i:], in)
			return
		case psParam(name, "encodedcommand", 1) || name == "ec" || name == "enc" || name == "e":
			w.add(reasonEncoded)
			return
		case psParam(name, "command", 1):
			if hasValue {
				value = args[i].text[len(args[i].text)-len(value):] // as written
				psCode(w, append([]carg{{text: value, raw: value, runtime: args[i].runtime}}, args[i+1:]...), in)
			} else {
				psCode(w, args[i+1:], in)
			}
			return
		case psParam(name, "file", 1):
			return
		case psParam(name, "executionpolicy", 2) || name == "ep" || psParam(name, "windowstyle", 1) ||
			psParam(name, "outputformat", 1) || psParam(name, "inputformat", 2) || psParam(name, "version", 1) ||
			psParam(name, "psconsolefile", 2) || psParam(name, "workingdirectory", 2) || name == "wd" ||
			psParam(name, "configurationname", 2) || psParam(name, "settingsfile", 2) ||
			psParam(name, "custompipename", 2) || psParam(name, "encodedarguments", 9) || name == "ea":
			if !hasValue {
				i++
			}
		}
	}
	// No command: powershell reads commands on stdin.
	stdinCode(w, in)
}

// psParam reports whether name is a prefix of full at least n long (as
// PowerShell's parameters may be shortened).
func psParam(name, full string, n int) bool {
	return len(name) >= n && strings.HasPrefix(full, name)
}

// psCode checks the words powershell runs as code: - reads stdin.
func psCode(w *win, args []carg, in stageInput) {
	if len(args) == 1 && args[0].text == "-" {
		stdinCode(w, in)
		return
	}
	var parts []string
	for _, a := range args {
		parts = append(parts, a.text)
	}
	w.c.checkPS(strings.Join(parts, " "), w.depth+1)
}

// psWord is a word of PowerShell code.
type psWord struct {
	text    string
	runtime bool // holds a $variable or $(...) expanded when it runs
}

// checkPS reads src as PowerShell code.
func (c *checker) checkPS(src string, depth int) {
	if !c.enter(src, depth, powerShell, "") {
		return
	}
	w := &win{c: c, depth: depth}
	stmts := psStatements(src)
	w.psAliasDefs(stmts)
	lower := strings.ToLower(src)
	downloads := strings.Contains(lower, "downloadstring") || strings.Contains(lower, "downloadfile") ||
		strings.Contains(lower, "downloaddata") || strings.Contains(lower, "net.webclient") || strings.Contains(lower, "http://") || strings.Contains(lower, "https://")
	var pipe []psStmt
	flush := func() {
		in := stageInput{}
		for _, st := range pipe {
			w.psCommand(st.words, in, &downloads)
			in.piped = true
			if len(st.words) > 0 && psDownloads[winName(st.words[0].text)] {
				in.download = true
			}
		}
		pipe = nil
	}
	for _, st := range stmts {
		pipe = append(pipe, st)
		if !st.piped {
			flush()
		}
	}
	flush()
	if strings.Contains(lower, "[scriptblock]::create") || strings.Contains(lower, ".invokescript(") {
		c.add(reasonEval)
	}
}

// psStmt is one command of PowerShell code; piped: its output goes to the
// next.
type psStmt struct {
	words []psWord
	piped bool
}

// psStatements splits PowerShell code into commands.
func psStatements(src string) []psStmt {
	var out []psStmt
	var cur []psWord
	end := func(piped bool) {
		if len(cur) > 0 {
			out = append(out, psStmt{words: cur, piped: piped})
		}
		cur = nil
	}
	for i := 0; i < len(src); {
		b := src[i]
		switch {
		case b == ' ' || b == '\t' || b == '\r' || b == ',':
			i++
		case b == '#':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case b == '<' && i+1 < len(src) && src[i+1] == '#':
			j := strings.Index(src[i:], "#>")
			if j < 0 {
				return append(out, psStmt{words: cur})
			}
			i += j + 2
		case b == '|' && i+1 < len(src) && src[i+1] == '|', b == '&' && i+1 < len(src) && src[i+1] == '&':
			end(false)
			i += 2
		case b == '|':
			end(true)
			i++
		case b == ';' || b == '\n' || b == '{' || b == '}' || b == '(' || b == ')':
			end(false)
			i++
		case b == '&' || b == '.' && len(cur) == 0 && i+1 < len(src) && (src[i+1] == ' ' || src[i+1] == '\t'):
			// The call operators & and . run the command named next.
			cur = append(cur, psWord{text: string(b)})
			i++
		default:
			w, j := readPSWord(src, i)
			cur = append(cur, w)
			i = j
		}
	}
	end(false)
	return out
}

// readPSWord reads the word at src[i].
func readPSWord(src string, i int) (psWord, int) {
	var b strings.Builder
	w := psWord{}
	for i < len(src) {
		ch := src[i]
		switch {
		case ch == '`':
			if i+1 < len(src) {
				b.WriteByte(src[i+1])
			}
			i += 2
			continue
		case ch == '\'':
			j := i + 1
			for j < len(src) {
				if src[j] == '\'' {
					if j+1 < len(src) && src[j+1] == '\'' {
						b.WriteByte('\'')
						j += 2
						continue
					}
					break
				}
				b.WriteByte(src[j])
				j++
			}
			i = j + 1
			continue
		case ch == '"':
			j := i + 1
			for j < len(src) && src[j] != '"' {
				if src[j] == '`' && j+1 < len(src) {
					j++
				} else if src[j] == '$' && j+1 < len(src) && src[j+1] != ' ' && src[j+1] != '"' {
					w.runtime = true
				}
				b.WriteByte(src[j])
				j++
			}
			i = j + 1
			continue
		case ch == '$':
			w.runtime = true
		case ch == '@' && b.Len() == 0 && i+1 < len(src) && (isWordByte(src[i+1]) || src[i+1] == '{' || src[i+1] == '('):
			// @args, @params splat an array or a hashtable into the
			// arguments: any parameter, known at run time.
			w.runtime = true
		case strings.IndexByte(" \t\r\n;|&{}(),", ch) >= 0:
			w.text = b.String()
			return w, i
		}
		b.WriteByte(ch)
		i++
	}
	w.text = b.String()
	return w, min(i, len(src))
}

// psRemove are Remove-Item and its aliases.
var psRemove = map[string]bool{"remove-item": true, "ri": true, "rm": true, "del": true, "erase": true, "rd": true, "rmdir": true}

// psCommand checks one PowerShell command.
func (w *win) psCommand(words []psWord, in stageInput, downloads *bool) {
	called := false
	for len(words) > 0 && (words[0].text == "&" || words[0].text == ".") && !words[0].runtime {
		words, called = words[1:], true
	}
	if len(words) == 0 {
		return
	}
	if words[0].runtime {
		w.psRenames("", words) // $function:r = '...'
		// $x = ..., $x.Method(): an expression; & $x runs a command
		// only known at run time.
		if called {
			w.add(reasonDynamic)
		}
		return
	}
	name := winName(words[0].text)
	args := words[1:]
	w.psRenames(name, words)
	// What it runs once the aliases the code defines are resolved
	// (PowerShell resolves them when the command runs, wherever the
	// Set-Alias is).
	if targets := w.psAliases[name]; len(targets) > 0 && w.psAliasDepth < maxDepth {
		w.psAliasDepth++
		for _, t := range targets {
			w.psCommand(append([]psWord{{text: t}}, args...), in, downloads)
		}
		w.psAliasDepth--
	}
	if psRules[name] && slices.ContainsFunc(args, isSplat) {
		w.add(reasonDynamicArgs(name))
	}
	lowArgs := make([]string, len(args))
	for i, a := range args {
		lowArgs[i] = strings.ToLower(a.text)
	}
	param := func(full string, n int) bool {
		for _, a := range lowArgs {
			if strings.HasPrefix(a, "-") {
				p, _, _ := strings.Cut(a[1:], ":")
				if psParam(p, full, n) {
					return true
				}
			}
		}
		return false
	}
	switch {
	case psRemove[name]:
		if param("recurse", 1) {
			w.add(reasonRecursiveDelete)
		}
		if in.piped {
			// Get-ChildItem -Recurse | Remove-Item: find -delete.
			w.add(reasonPipedDelete)
		}
		for _, a := range args {
			l := strings.ToLower(a.text)
			if machineKey(l) {
				w.add(reasonRegistry)
			}
			if !strings.HasPrefix(l, "-") && (winRoot(l) && (strings.ContainsAny(l, `\/:`) || strings.HasPrefix(l, "$") || l == "~")) {
				w.add(reasonRootDelete)
			}
		}
		return
	case name == "remove-itemproperty" || name == "rp" || name == "clear-itemproperty" || name == "clp":
		for _, a := range lowArgs {
			if machineKey(a) {
				w.add(reasonRegistry)
			}
		}
		return
	case name == "format-volume" || name == "clear-disk" || name == "initialize-disk" || name == "remove-partition" || name == "format-disk":
		w.add(reasonFormat)
		return
	case name == "stop-computer" || name == "restart-computer":
		w.add(reasonShutdown)
		return
	case name == "iex" || name == "invoke-expression":
		if *downloads || in.download {
			w.add(reasonRemoteScript)
		} else {
			w.add(reasonEval)
		}
		return
	case name == "invoke-command" || name == "icm":
		if param("computername", 2) || param("filepath", 1) {
			w.add(reasonDynamic)
		}
		return
	case name == "start-process" || name == "saps" || name == "start":
		if param("verb", 1) {
			for _, a := range lowArgs {
				if a == "runas" {
					w.add(reasonPrivilege)
				}
			}
		}
		w.psStart(args)
		return
	case name == "stop-process" || name == "spps" || name == "kill":
		if param("name", 1) || len(args) > 0 && !strings.HasPrefix(lowArgs[0], "-") && !isNumber(lowArgs[0]) {
			w.add(reasonKillByName)
		}
		return
	case name == "stop-service" || name == "spsv" || name == "remove-service":
		w.add(reasonService)
		return
	case name == "set-service":
		for _, a := range lowArgs {
			if a == "disabled" || a == "stopped" {
				w.add(reasonService)
			}
		}
		return
	case name == "set-netfirewallprofile" || name == "disable-netfirewallrule":
		for _, a := range lowArgs {
			if a == "false" || a == "$false" || strings.HasSuffix(a, ":$false") || name == "disable-netfirewallrule" {
				w.add(reasonFirewall)
				break
			}
		}
		return
	case name == "set-mppreference":
		for _, a := range lowArgs {
			if strings.HasPrefix(a, "-disable") {
				w.add(reasonFirewall)
				break
			}
		}
		return
	case name == "clear-eventlog" || name == "remove-eventlog" || name == "limit-eventlog":
		w.add(reasonEventLogs)
		return
	case name == "clear-history" || name == "clhy":
		return
	}
	// A program: the cmd.exe and POSIX rules.
	cargs := make([]carg, len(args))
	for i, a := range args {
		raw := a.text
		if strings.ContainsAny(raw, " \t") {
			raw = `"` + raw + `"`
		}
		cargs[i] = carg{text: a.text, raw: raw, runtime: a.runtime}
	}
	w.command(name, cargs, in)
	prev := ""
	if in.piped {
		prev = "cat | "
		if in.download {
			prev = "curl x | "
		}
	}
	w.c.check(prev+shStage(name, cargs), w.depth)
}

// psStart reads Start-Process FILE [ARGS] (-FilePath, -ArgumentList): the
// program it starts is checked as a cmd.exe command.
func (w *win) psStart(args []psWord) {
	var file string
	var rest []string
	runtime := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		l := strings.ToLower(a.text)
		if strings.HasPrefix(l, "-") {
			p, _, _ := strings.Cut(l[1:], ":")
			switch {
			case psParam(p, "filepath", 1):
				if i+1 < len(args) {
					file, runtime = args[i+1].text, runtime || args[i+1].runtime
				}
			case psParam(p, "argumentlist", 1) || p == "args":
				if i+1 < len(args) {
					rest = append(rest, args[i+1].text)
					runtime = runtime || args[i+1].runtime
				}
			}
			if !psParam(p, "wait", 1) && !psParam(p, "nonewwindow", 1) && !psParam(p, "passthru", 1) && !psParam(p, "usenewenvironment", 1) {
				i++
			}
			continue
		}
		if file == "" {
			file, runtime = a.text, runtime || a.runtime
		} else {
			rest = append(rest, a.text)
			runtime = runtime || a.runtime
		}
	}
	if file == "" {
		return
	}
	if runtime && winRules[winName(file)] != nil {
		w.add(reasonDynamicArgs(winName(file)))
	}
	line := `"` + file + `" ` + strings.Join(rest, " ")
	w.c.checkCmd(line, w.depth+1)
}

func isNumber(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}

// psRules are the PowerShell commands psCommand has rules for: a splatted
// argument (@args) can be any of their parameters.
var psRules = map[string]bool{
	"remove-item": true, "ri": true, "rm": true, "del": true, "erase": true, "rd": true, "rmdir": true,
	"remove-itemproperty": true, "rp": true, "clear-itemproperty": true, "clp": true,
	"invoke-command": true, "icm": true, "start-process": true, "saps": true, "start": true,
	"stop-process": true, "spps": true, "kill": true, "set-service": true,
	"set-netfirewallprofile": true, "set-mppreference": true,
}

// isSplat reports whether a word splats a variable (@args).
func isSplat(w psWord) bool {
	return w.runtime && strings.HasPrefix(w.text, "@")
}

func isWordByte(b byte) bool {
	return b == '_' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9'
}

// psAliasDefs collects the aliases the code's Set-Alias and New-Alias
// (sal, nal) define, wherever they are: PowerShell looks an alias up when
// the command runs. One whose name or value is only known at run time is
// flagged.
func (w *win) psAliasDefs(stmts []psStmt) {
	for _, st := range stmts {
		words := st.words
		for len(words) > 0 && (words[0].text == "&" || words[0].text == ".") && !words[0].runtime {
			words = words[1:]
		}
		if len(words) == 0 || words[0].runtime {
			continue
		}
		switch winName(words[0].text) {
		case "set-alias", "new-alias", "sal", "nal":
		default:
			continue
		}
		var pos []psWord
		var name, value *psWord
		args := words[1:]
		for i := 0; i < len(args); i++ {
			a := args[i]
			if !strings.HasPrefix(a.text, "-") || a.runtime {
				pos = append(pos, a)
				continue
			}
			p, v, attached := strings.Cut(strings.ToLower(a.text[1:]), ":")
			var val *psWord
			if attached {
				val = &psWord{text: a.text[len(a.text)-len(v):], runtime: a.runtime}
			} else if i+1 < len(args) && !psParam(p, "passthru", 1) && !psParam(p, "force", 1) && !psParam(p, "whatif", 1) && !psParam(p, "confirm", 1) {
				i++
				val = &args[i]
			}
			switch {
			case psParam(p, "name", 1):
				name = val
			case psParam(p, "value", 1):
				value = val
			}
		}
		for _, a := range pos {
			if name == nil {
				name = &a
			} else if value == nil {
				value = &a
			}
		}
		if name == nil || value == nil {
			continue
		}
		if name.runtime || value.runtime {
			w.add(reasonAlias)
			continue
		}
		if w.psAliases == nil {
			w.psAliases = map[string][]string{}
		}
		n := winName(name.text)
		w.psAliases[n] = append(w.psAliases[n], winName(value.text))
	}
}

// psRenames flags the other ways PowerShell code renames a command: an
// alias defined with a name or value only known at run time, aliases
// imported from a file (Import-Alias), and the alias: and function:
// drives (Set-Item function:r 'Remove-Item -Recurse x', $function:r =
// '...'), whose string values are code not seen here.
func (w *win) psRenames(name string, words []psWord) {
	switch name {
	case "import-alias", "ipal":
		w.add(reasonAlias)
		return
	}
	if strings.HasPrefix(name, "get-") || name == "test-path" || name == "gi" || name == "gci" || name == "dir" || name == "ls" {
		return
	}
	for _, wd := range words {
		l := strings.ToLower(strings.TrimLeft(wd.text, "${"))
		if strings.HasPrefix(l, "alias:") || strings.HasPrefix(l, "function:") ||
			strings.HasPrefix(l, "-path:alias:") || strings.HasPrefix(l, "-path:function:") {
			w.add(reasonAlias)
			return
		}
	}
}

package cmdcheck

import (
	"regexp"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// codeRules: programs that run code they are given — shells, eval,
// source, interpreters.
var codeRules = map[string]rule{
	"eval":  evalRule,
	"trap":  trapRule,
	"alias": aliasRule,
	"hash":  hashRule,
	// enable -f FILE NAME makes NAME a builtin loaded from FILE (bash);
	// enable -n only turns builtins off.
	"enable": withShortFlag("f", reasonAlias),
	"read":   readRule,
	"printf": printfRule,
	// Programs with an option whose value is a command line they run.
	"sort": optionCodeRule("", "compress-program"),
	"rg":   optionCodeRule("", "pre", "hostname-bin"),
	"ag":   optionCodeRule("", "pager"),
	"man":  optionCodeRule("P", "pager", "html"),
	"ssh":  sshRule, "scp": sshRule, "sftp": sshRule,
	"source": sourceRule, ".": sourceRule,
	"python": interpreterRule, "ruby": interpreterRule, "node": interpreterRule,
	"php": interpreterRule, "pwsh": interpreterRule, "lua": interpreterRule,
	"perl": func(s *scan, cmd *command) {
		inPlaceRule(s, cmd)
		interpreterRule(s, cmd)
	},
	"sh": shellRule, "bash": shellRule, "zsh": shellRule, "dash": shellRule, "ksh": shellRule, "ash": shellRule,
	"mksh": shellRule, "yash": shellRule, "fish": shellRule, "csh": shellRule, "tcsh": shellRule,
}

// progSpec says how a program takes its code: the short options that
// give it (so stdin is data), the short options that take a value, and
// whether it is a shell (-s reads commands from stdin, -c CODE).
type progSpec struct {
	code, withArg string
	shell         bool
}

var shellSpec = progSpec{code: "c", withArg: "oO", shell: true}

var interpreterSpecs = map[string]progSpec{
	"python": {code: "cm", withArg: "WXQ"},
	"perl":   {code: "eE"},
	"ruby":   {code: "e", withArg: "IrC"},
	"node":   {code: "ep", withArg: "r"},
	"php":    {code: "rfBRFE", withArg: "cdz"},
	"pwsh":   {code: "cfeCFE"},
	"lua":    {code: "e", withArg: "l"},
}

func specOf(cmd *command) progSpec {
	if sp, ok := interpreterSpecs[family(cmd.name)]; ok {
		return sp
	}
	return shellSpec
}

// readsStdin reports whether a program reads the code it runs from stdin
// (sh, bash -s, python3 -, node), and whether it says so explicitly (-s,
// -). A script file, -c CODE, -e CODE or -m MODULE means stdin is data;
// script is the index of the script file's argument, or -1.
func readsStdin(sp progSpec, args []string) (reads, explicit bool, script int) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-":
			return true, true, -1
		case strings.HasPrefix(a, "--"):
			// Long options (--norc, --) say nothing about stdin.
		case len(a) > 1 && (a[0] == '-' || a[0] == '+'):
			letters := a[1:]
			if strings.ContainsAny(letters, sp.code) {
				return false, false, -1
			}
			if sp.shell && a[0] == '-' && strings.Contains(letters, "s") {
				return true, true, -1
			}
			if len(letters) == 1 && strings.Contains(sp.withArg, letters) {
				i++
			}
		default:
			return false, false, i // a script file
		}
	}
	return true, false, -1
}

var procFdRe = regexp.MustCompile(`^/proc/[^/]+/fd/([0-9]+)$`)

// fdPath reports whether a script path names an open file descriptor
// (/dev/stdin, /dev/fd/N, /proc/self/fd/N), and which one: the program
// comes from a pipe or a redirection, like sh reading stdin.
func fdPath(p string) (string, bool) {
	switch {
	case p == "/dev/stdin":
		return "0", true
	case strings.HasPrefix(p, "/dev/fd/") && len(p) > len("/dev/fd/") && strings.Trim(p[len("/dev/fd/"):], "0123456789") == "":
		return p[len("/dev/fd/"):], true
	}
	if m := procFdRe.FindStringSubmatch(p); m != nil {
		return m[1], true
	}
	return "", false
}

// procSubst is the <(...) a field is, or nil.
func procSubst(f field) *syntax.ProcSubst {
	if f.word == nil || len(f.word.Parts) != 1 {
		return nil
	}
	ps, _ := f.word.Parts[0].(*syntax.ProcSubst)
	return ps
}

// shellCodeArg finds the CODE of sh -c CODE: the first operand after an
// option cluster with c, when no script file comes first.
func shellCodeArg(fields []field) (field, bool) {
	seenC := false
	for i := 0; i < len(fields); i++ {
		a := fields[i].s
		switch {
		case strings.HasPrefix(a, "--"):
		case len(a) > 1 && (a[0] == '-' || a[0] == '+'):
			if a[0] == '-' && strings.Contains(a[1:], "c") {
				seenC = true
			} else if len(a) == 2 && strings.Contains(shellSpec.withArg, a[1:]) {
				i++
			}
		default:
			return fields[i], seenC
		}
	}
	return field{}, false
}

func shellRule(s *scan, cmd *command) {
	if code, ok := shellCodeArg(cmd.fields); ok {
		s.code(code)
		return
	}
	s.remoteArgs(cmd)
	s.stdinCode(cmd, shellSpec)
}

func interpreterRule(s *scan, cmd *command) {
	s.remoteArgs(cmd)
	s.stdinCode(cmd, specOf(cmd))
}

// evalRule: eval always needs approval (its code is a string, often built
// at run time); what can be read of that string is checked too, in this
// shell (its aliases apply, one it defines would apply later).
func evalRule(s *scan, cmd *command) {
	s.add(reasonEval)
	if len(cmd.fields) == 0 {
		return
	}
	code := joinFields(cmd.fields)
	if s.downloadsIn(code) {
		s.add(reasonRemoteScript)
		return
	}
	s.c.checkIn(code.s, s.depth+1, s)
}

// trapRule: trap CODE SIGNAL... runs CODE in this shell when a signal
// comes (or the shell exits, or before each command for DEBUG), so CODE
// is checked as a command line of this shell.
func trapRule(s *scan, cmd *command) {
	if len(cmd.fields) < 2 || strings.HasPrefix(cmd.args[0], "-") {
		return // trap -p, trap -l, trap - SIGNAL (reset), trap SIGNAL
	}
	s.sharedCode(cmd.fields[0])
}

// aliasRule: alias NAME=VALUE makes NAME run VALUE, so VALUE is checked
// as a command line, and later commands are read with the alias
// (alias.go). A definition the check cannot follow is flagged: not a
// top-level statement of the line (in a block, a loop, a condition, a
// function, a pipeline), in code run later in the same shell (eval,
// source, trap), or with a name or value only known at run time.
func aliasRule(s *scan, cmd *command) {
	for _, f := range cmd.fields {
		name, value, ok := strings.Cut(f.s, "=")
		if !f.lit {
			s.add(reasonAlias) // alias "$x", alias r="$v"
		}
		if !ok {
			continue // alias, alias -p, alias NAME: prints
		}
		s.code(field{s: value, lit: f.lit, word: f.word})
		if !s.followed(cmd, name, value) {
			s.add(reasonAlias)
		}
	}
}

// followed reports whether the alias definition NAME=VALUE of cmd is one
// collectAliases recorded: made by a top-level statement of this source.
func (s *scan) followed(cmd *command, name, value string) bool {
	if s.shared || cmd.stmt == nil || !s.top[cmd.stmt] {
		return false
	}
	return slices.ContainsFunc(s.aliases[name], func(a aliasEntry) bool { return a.value == value })
}

// hashRule: hash -p PATH NAME makes NAME run PATH (bash), for the rest of
// the shell's life, whatever line it is on.
func hashRule(s *scan, cmd *command) {
	for _, a := range cmd.args {
		if a == "--" {
			return
		}
		if shortFlag(a, "p") {
			s.add(reasonAlias)
		}
	}
}

// readRule: read NAME... sets variables; one named at run time, or an
// element of BASH_ALIASES or BASH_CMDS, can rename a command.
func readRule(s *scan, cmd *command) {
	for i := 0; i < len(cmd.fields); i++ {
		a := cmd.fields[i]
		if !a.lit || !strings.HasPrefix(a.s, "-") || len(a.s) < 2 {
			renameTarget(s, a)
			continue
		}
		// An option cluster (-rp): the last letter may take a value
		// (-p PROMPT, -d DELIM; -a NAME names an array).
		if last := a.s[len(a.s)-1]; strings.IndexByte("adinNptu", last) >= 0 && i+1 < len(cmd.fields) {
			i++
			if last == 'a' {
				renameTarget(s, cmd.fields[i])
			}
		}
	}
}

// printfRule: printf -v NAME FORMAT ... sets a variable (bash).
func printfRule(s *scan, cmd *command) {
	if len(cmd.fields) == 0 {
		return
	}
	a := cmd.fields[0]
	if a.s == "-v" && len(cmd.fields) > 1 {
		renameTarget(s, cmd.fields[1])
	} else if v, ok := strings.CutPrefix(a.s, "-v"); ok && v != "" {
		renameTarget(s, field{s: v, lit: a.lit})
	}
}

// renameTarget flags a variable a builtin sets that may be an alias or a
// hashed command: its name only known at run time, or BASH_ALIASES or
// BASH_CMDS.
func renameTarget(s *scan, f field) {
	if !f.lit || namesRenameVar(f.s) {
		s.add(reasonAlias)
	}
}

// sourceRule: source FILE runs FILE in this shell. A file named at run
// time or produced by a download (source <(curl ...)) is not known here.
func sourceRule(s *scan, cmd *command) {
	if len(cmd.fields) == 0 {
		return
	}
	f := cmd.fields[0]
	switch {
	case s.downloadsIn(f):
		s.add(reasonRemoteScript)
	case !f.lit:
		s.add(reasonDynamic)
		if ps := procSubst(f); ps != nil {
			s.procProgram(ps, true)
		}
	default:
		// source /dev/stdin <<< CODE
		if fd, ok := fdPath(f.s); ok {
			s.fedProgram(cmd, progSource, fd, true)
		}
	}
}

// remoteArgs flags a downloaded script given to a program that runs code:
// bash <(curl ...), python3 -c "$(wget -O- ...)".
func (s *scan) remoteArgs(cmd *command) {
	for _, f := range cmd.fields {
		if s.downloadsIn(f) {
			s.add(reasonRemoteScript)
			return
		}
	}
}

// stdinCode checks a shell or interpreter that runs what it reads on
// stdin (or from a file descriptor or <(...) named as its script): fed by
// a pipe or a file its program is not known here (a download makes it a
// remote script); fed a here-document, a shell's program is right there
// and is checked as a command line.
func (s *scan) stdinCode(cmd *command, sp progSpec) {
	reads, explicit, script := readsStdin(sp, cmd.args)
	fd := "0"
	if script >= 0 && script < len(cmd.fields) {
		f := cmd.fields[script]
		if ps := procSubst(f); ps != nil {
			s.procProgram(ps, sp.shell)
			return
		}
		fd, reads = fdPath(f.s)
		explicit = reads
	}
	if reads {
		kind := progInterpreter
		if sp.shell {
			kind = progShell
		}
		s.fedProgram(cmd, kind, fd, explicit)
	}
}

// optionCodeRule checks the values of a program's options that name a
// command line it runs (sort --compress-program, rg --pre, man -P): as
// shell code, like git's core.pager.
func optionCodeRule(shorts string, longs ...string) rule {
	return func(s *scan, cmd *command) {
		optionCode(s, cmd, shorts, longs...)
	}
}

// optionCode checks the command lines given to cmd by the short options
// (letters of shorts, -Pless or -P less) and long options (--pre=x,
// --pre x, or a GNU abbreviation) that take one.
func optionCode(s *scan, cmd *command, shorts string, longs ...string) {
	for i := 0; i < len(cmd.fields); i++ {
		f := cmd.fields[i]
		a := f.s
		if a == "--" {
			return
		}
		value, found := f, false
		switch {
		case strings.HasPrefix(a, "--"):
			if longOpt(a, longs...) {
				found = true
				if _, v, eq := strings.Cut(a, "="); eq {
					value.s = v
				} else if i+1 < len(cmd.fields) {
					i++
					value = cmd.fields[i]
				}
			}
		case len(a) > 1 && a[0] == '-' && shorts != "":
			if j := strings.IndexAny(a[1:], shorts); j >= 0 {
				found = true
				if rest := a[j+2:]; rest != "" {
					value.s = rest
				} else if i+1 < len(cmd.fields) {
					i++
					value = cmd.fields[i]
				}
			}
		}
		if found && value.s != "" {
			s.code(value)
		}
	}
}

// sshRule: ssh -o ProxyCommand=CMD (and LocalCommand, KnownHostsCommand)
// runs CMD here, like scp -S and sftp -S run their ssh program.
func sshRule(s *scan, cmd *command) {
	if cmd.name != "ssh" {
		optionCode(s, cmd, "S")
	}
	for i := 0; i < len(cmd.fields); i++ {
		f := cmd.fields[i]
		opt := ""
		switch {
		case f.s == "-o" && i+1 < len(cmd.fields):
			i++
			f = cmd.fields[i]
			opt = f.s
		case strings.HasPrefix(f.s, "-o"):
			opt = f.s[2:]
		default:
			continue
		}
		key, value, ok := strings.Cut(opt, "=")
		if !ok {
			key, value, _ = strings.Cut(opt, " ")
		}
		switch strings.ToLower(strings.TrimSpace(key)) {
		case "proxycommand", "localcommand", "knownhostscommand":
			if value = strings.TrimSpace(value); value != "" && !strings.EqualFold(value, "none") {
				s.code(field{s: value, lit: f.lit, runtime: f.runtime, word: f.word})
			}
		}
	}
}

// prog is the kind of program that reads code from a file descriptor.
type prog int

const (
	progInterpreter prog = iota // python3, node, ...: its code is not read here
	progShell                   // sh, bash, ...: a shell of its own
	progSource                  // source, .: this shell
)

// procProgram checks a program read from <(...) (bash <(echo CODE)): not
// in plain sight, like one on stdin; what echo or printf gives a shell is
// read as the command line it is.
func (s *scan) procProgram(ps *syntax.ProcSubst, shell bool) {
	if ps.Op != syntax.CmdIn || s.downloads(ps) {
		return // a download is flagged by remoteArgs
	}
	s.add(reasonStdinCode)
	if shell {
		for _, st := range ps.Stmts {
			s.echoed(st)
		}
	}
}

// fedProgram checks a program read from file descriptor fd; explicit: the
// command line says so (sh -s, python3 -, sh /dev/stdin), so with nothing
// feeding it the program comes from wherever the executor's fd points. In
// a function body stdin is whatever the caller pipes in (f() { sh; };
// echo CODE | f), so nothing feeding it there is no better.
func (s *scan) fedProgram(cmd *command, kind prog, fd string, explicit bool) {
	fed := false
	if cmd.stmt != nil {
		if in := s.stdin[cmd.stmt]; in != nil && fd == "0" {
			fed = true
			if in.download {
				s.add(reasonRemoteScript)
			} else {
				s.add(reasonStdinCode)
				s.echoed(in.prev)
			}
		}
		for _, r := range cmd.stmt.Redirs {
			fed = s.stdinRedirect(r, kind, fd) || fed
		}
	}
	if !fed && (explicit || fd == "0" && cmd.stmt != nil && s.inFunc[cmd.stmt]) {
		s.add(reasonStdinCode)
	}
}

// echoed checks the text echo or printf pipes into a shell as the
// command line it is (echo 'rm -rf x' | sh).
func (s *scan) echoed(prev *syntax.Stmt) {
	call, ok := prev.Cmd.(*syntax.CallExpr)
	if !ok || len(call.Args) == 0 {
		return
	}
	for _, cmd := range append([]*command{s.command(call)}, s.aliasReadings(call)...) {
		if cmd.name == "echo" || cmd.name == "printf" {
			s.c.check(joinFields(cmd.fields).s, s.depth+1)
		}
	}
}

// stdinRedirect checks one redirection of a program that reads its code
// from file descriptor fd (stdin: "0"); it reports whether r feeds it.
func (s *scan) stdinRedirect(r *syntax.Redirect, kind prog, fd string) bool {
	n := "0"
	if r.N != nil {
		n = r.N.Value
	}
	if n != fd {
		return false
	}
	switch r.Op {
	case syntax.RdrIn, syntax.DplIn, syntax.RdrInOut:
		if r.Word == nil || s.literalText(r.Word).s == "/dev/null" {
			return false
		}
		if s.downloads(r.Word) {
			s.add(reasonRemoteScript)
		} else {
			s.add(reasonStdinCode)
		}
	case syntax.Hdoc, syntax.DashHdoc:
		// An interpreter's program in a here-document is in plain
		// sight, like python3 -c CODE; a shell's is checked.
		if kind != progInterpreter && r.Hdoc != nil {
			s.shellCode(s.hdocText(r), kind)
		}
	case syntax.WordHdoc:
		if kind != progInterpreter && r.Word != nil {
			s.shellCode(s.literalText(r.Word), kind)
		}
	default:
		return false
	}
	return true
}

// hdocText is the text of a here-document: as written when its delimiter
// is quoted (<<'EOF'), else with its expansions.
func (s *scan) hdocText(r *syntax.Redirect) field {
	quoted := true
	if r.Word != nil && len(r.Word.Parts) == 1 {
		l, ok := r.Word.Parts[0].(*syntax.Lit)
		quoted = !ok || strings.Contains(l.Value, `\`)
	}
	if !quoted {
		return s.literalText(r.Hdoc)
	}
	var b strings.Builder
	for _, p := range r.Hdoc.Parts {
		if l, ok := p.(*syntax.Lit); ok {
			b.WriteString(l.Value)
		} else {
			b.WriteString(s.text(p))
		}
	}
	return field{s: b.String(), lit: true, word: r.Hdoc}
}

// Package cmdcheck decides whether a shell command line needs a person's
// approval before it runs. It parses the line with a real shell parser
// (mvdan.cc/sh/v3/syntax) and holds every command the line would run —
// in pipelines, lists, subshells, functions, loop and if bodies, command
// and process substitutions, behind wrappers (sudo, env, nohup, timeout,
// xargs, ...) and inside strings run as code (sh -c, su -c, eval, a
// here-document fed to a shell) — against a table of dangerous operations
// modelled on Hermes Agent's dangerous-command patterns: recursive deletes,
// disk formatting, sudo, a downloaded script run by a shell, force pushes,
// SQL DROP, writes to /etc or ~/.ssh, and more.
//
// Quoting is read the way the shell reads it (r'm', "rm", \rm, $'\x72m',
// rm${IFS}-rf, {rm,-rf,x} all run rm), and quoted text that is only data
// (grep -r 'rm -rf' docs/, echo "sudo") is not a command.
//
// # Security
//
// This is defence in depth, not a boundary: it reads the command line, not
// what the programs it starts will do. A script written to a file and then
// run by name, an interpreter's own code (python3 -c '...'), a program
// that deletes files itself, or a function or alias defined by an earlier
// command are not seen. What it cannot read for certain is flagged rather
// than passed: a command whose name is only known at run time ($X,
// $(...), a glob), a program that has rules (rm, chmod, git push, kill,
// ...) given an argument only known at run time, eval, a program fed to a
// shell or interpreter on stdin (or named as /dev/stdin or <(...)), a
// line that does not parse, and a line too long or too deeply nested to
// check. The line is read both as bash and as POSIX sh (dash, which is
// /bin/sh on Debian), and what either would run is checked.
package cmdcheck

import (
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// The reasons Check gives. They are stable labels: a caller that remembers
// an approval of one (for a session, say) holds it for later commands with
// the same reason, so their texts do not change.
const (
	reasonRootDelete      = "delete of /, ~ or a top-level directory"
	reasonRecursiveDelete = "recursive delete"
	reasonXargsDelete     = "delete of the files xargs is given"
	reasonFindDelete      = "delete of the files find matches"
	reasonPrivilege       = "runs as another user (sudo/su)"
	reasonFormat          = "formats or partitions a disk (mkfs)"
	reasonDeviceWrite     = "writes to a disk or memory device"
	reasonChmod777        = "recursive world-writable permissions (chmod -R 777)"
	reasonChmodRoot       = "recursive permission change of /, ~ or a top-level directory"
	reasonChownRoot       = "recursive ownership change of /, ~ or a top-level directory"
	reasonMoveRoot        = "moves /, ~ or a top-level directory"
	reasonForkBomb        = "fork bomb"
	reasonRemoteScript    = "runs a script downloaded from the network (curl | sh)"
	reasonShutdown        = "shuts down or reboots the machine"
	reasonKillAll         = "kills every process (kill -9 -1)"
	reasonKillByName      = "kills processes by name (killall, pkill -9)"
	reasonForcePush       = "rewrites remote history (git push --force)"
	reasonResetHard       = "discards uncommitted changes (git reset --hard)"
	reasonGitClean        = "deletes untracked files (git clean -f)"
	reasonSQLDrop         = "SQL DROP TABLE/DATABASE"
	reasonSQLTruncate     = "SQL TRUNCATE"
	reasonSQLDelete       = "SQL DELETE without WHERE"
	reasonService         = "stops or disables a system service"
	reasonFirewall        = "flushes or disables the firewall"
	reasonHistory         = "clears the shell history"
	reasonCrontab         = "removes all cron jobs (crontab -r)"
	reasonEtc             = "writes to /etc (system configuration)"
	reasonSSH             = "writes to ~/.ssh"
	reasonTooComplex      = "too deeply nested to check automatically"
	reasonKillParent      = "kills the process that runs the command, or the processes it started (kill $PPID, pkill -P): they would escape cleanup"
	reasonTarRemove       = "deletes the files it archives (tar --remove-files)"
	reasonZipMove         = "deletes the files it archives (zip -m)"
	reasonSyncDelete      = "deletes files (rsync --delete, --remove-source-files)"
	reasonGitCode         = "defines a git alias that runs shell code (git -c alias.x='!...')"

	// What the check cannot see through.
	reasonDynamic     = "runs a command whose name or code is only known at run time ($VAR, $(...), a glob)"
	reasonEval        = "runs a string as shell code (eval)"
	reasonStdinCode   = "feeds a program to a shell or interpreter on stdin (... | sh, bash < file)"
	reasonUnparseable = "not valid shell syntax, so it cannot be checked"
	reasonTooLong     = "too long to check automatically"
)

// reasonDynamicArgs is the reason for a program that has rules (rm, git,
// chmod, kill, ...) run with an argument only known at run time.
func reasonDynamicArgs(program string) string {
	return "runs " + program + " with arguments only known at run time ($VAR, $(...), a glob)"
}

// Dialect is the shell a command line is written for.
type Dialect string

// The dialects: Sh is bash and POSIX sh (Linux, macOS, Git Bash on
// Windows, the docker, ssh and exec backends); Cmd is cmd.exe, which runs
// terminal() commands on a Windows host without Git Bash (see cmd.go).
const (
	Sh  Dialect = "sh"
	Cmd Dialect = "cmd"
	// powerShell is the code of powershell -Command (not a terminal shell
	// of its own: it is only reached from a cmd.exe line).
	powerShell Dialect = "powershell"
)

// Check returns the reasons cmd, a POSIX shell line, needs approval, each
// once, in the order found; none means it matched no rule. It never
// fails: input it cannot read is flagged with a reason saying so.
func Check(cmd string) []string {
	return CheckShell(cmd, Sh)
}

// CheckShell is [Check] for a line written for dialect d: Cmd reads it as
// cmd.exe does, with the Windows rules; anything else is Sh.
func CheckShell(cmd string, d Dialect) []string {
	c := &checker{}
	if d == Cmd {
		c.checkCmd(cmd, 0)
	} else {
		c.check(cmd, 0)
	}
	return c.reasons
}

// Dangerous reports whether cmd needs approval, and why: the reasons of
// [Check] joined with "; ".
func Dangerous(cmd string) (reason string, dangerous bool) {
	r := Check(cmd)
	return strings.Join(r, "; "), len(r) > 0
}

// Bounds on the work one check does. The parser recurses once per level
// of nesting, so input is refused (flagged) before it can make it recurse
// without bound: maxInput per parse, maxWork for the line and every string
// re-read as code, maxDepth levels of code in code (sh -c "eval '...'"),
// and maxNesting brackets deep.
const (
	maxInput   = 64 << 10
	maxWork    = 256 << 10
	maxDepth   = 8
	maxNesting = 100
)

type checker struct {
	reasons []string
	work    int // bytes parsed so far, re-read strings included
	seen    map[checked]bool
}

type checked struct {
	src     string
	depth   int
	dialect Dialect
}

func (c *checker) add(reason string) {
	for _, r := range c.reasons {
		if r == reason {
			return
		}
	}
	c.reasons = append(c.reasons, reason)
}

// check parses src, a command line or a string run as one at nesting
// depth, and holds every command in it against the rules.
func (c *checker) check(src string, depth int) {
	if !c.enter(src, depth, Sh) {
		return
	}
	// The terminal runs the line with /bin/sh, which is dash on Debian
	// and bash elsewhere, and the two read some lines differently:
	// ((rm -rf x)) is arithmetic to bash and two subshells to dash. So
	// the line is read in each dialect that parses it, and what either
	// would run is checked.
	parsed := false
	for _, lang := range dialects {
		f, err := syntax.NewParser(syntax.Variant(lang)).Parse(strings.NewReader(src), "")
		if err != nil {
			continue
		}
		parsed = true
		s := &scan{c: c, src: src, depth: depth, stdin: map[*syntax.Stmt]*pipeInput{}, staged: map[*syntax.Stmt]bool{}, cmds: map[*syntax.CallExpr]*command{}}
		syntax.Walk(f, s.visit)
	}
	if !parsed {
		c.add(reasonUnparseable)
	}
}

// enter starts the check of src in dialect d at nesting depth: false
// when there is nothing to do (empty, already checked, or over a bound,
// which is flagged).
func (c *checker) enter(src string, depth int, d Dialect) bool {
	if strings.TrimSpace(src) == "" {
		return false
	}
	// Each dialect's reading finds the same strings run as code; one
	// check of each is enough (and keeps nested code from doubling per
	// level).
	key := checked{src, depth, d}
	if c.seen[key] {
		return false
	}
	if c.seen == nil {
		c.seen = map[checked]bool{}
	}
	c.seen[key] = true
	c.work += len(src)
	switch {
	case len(src) > maxInput || c.work > maxWork:
		c.add(reasonTooLong)
		return false
	case depth > maxDepth || nesting(src) > maxNesting:
		c.add(reasonTooComplex)
		return false
	}
	return true
}

// dialects are the shells a line is read as: bash, and POSIX sh (dash).
var dialects = []syntax.LangVariant{syntax.LangBash, syntax.LangPOSIX}

// nesting estimates how deep src nests brackets: ( { [ and their $
// forms. Quotes are not tracked, so a bracket in a string moves the
// estimate either way; maxInput bounds what a crafted line can hide.
func nesting(src string) int {
	depth, deepest := 0, 0
	for i := 0; i < len(src); i++ {
		switch src[i] {
		case '\\':
			i++
		case '(', '{', '[':
			depth++
			deepest = max(deepest, depth)
		case ')', '}', ']':
			if depth > 0 {
				depth--
			}
		}
	}
	return deepest
}

// scan is one parsed source being checked.
type scan struct {
	c     *checker
	src   string
	depth int
	// stdin says what feeds the statements that read a pipe.
	stdin map[*syntax.Stmt]*pipeInput
	// staged marks the statements already seen as part of a pipeline.
	staged map[*syntax.Stmt]bool
	cmds   map[*syntax.CallExpr]*command
}

// pipeInput is what a pipeline stage reads on stdin.
type pipeInput struct {
	download bool         // an earlier stage downloads (curl, wget)
	prev     *syntax.Stmt // the stage just before
}

func (s *scan) add(reason string) { s.c.add(reason) }

func (s *scan) visit(n syntax.Node) bool {
	switch n := n.(type) {
	case *syntax.Stmt:
		s.stmt(n)
	case *syntax.FuncDecl:
		s.funcDecl(n)
	}
	return true
}

func (s *scan) stmt(st *syntax.Stmt) {
	s.redirects(st.Redirs)
	if !s.staged[st] {
		if stages := s.pipeline(st); stages != nil {
			s.sql(st, stages)
		}
	}
	if call, ok := st.Cmd.(*syntax.CallExpr); ok && len(call.Args) > 0 {
		cmd := s.command(call)
		cmd.stmt = st
		s.run(cmd)
	}
}

// command reads a simple command (once per call).
func (s *scan) command(call *syntax.CallExpr) *command {
	if cmd, ok := s.cmds[call]; ok {
		return cmd
	}
	cmd := unwrap(s.fields(call.Args))
	s.cmds[call] = cmd
	return cmd
}

// run holds a command against the rules.
func (s *scan) run(cmd *command) {
	if cmd.privileged {
		s.add(reasonPrivilege)
	}
	for _, code := range cmd.code {
		s.code(code)
	}
	if cmd.tooComplex {
		s.add(reasonTooComplex)
	}
	if cmd.tooLong {
		s.add(reasonTooLong)
	}
	switch {
	case cmd.name == "":
	case cmd.dynamic:
		s.add(reasonDynamic)
	default:
		s.rules(cmd)
	}
	// Other readings of the wrappers' options: only their rules count (a
	// name only known at run time there is most likely an option's value,
	// and the reading above has already flagged one in the command's
	// place).
	for _, alt := range cmd.alts {
		if alt.name != "" && !alt.dynamic {
			alt.stmt = cmd.stmt
			s.rules(alt)
		}
	}
}

// rules holds a command whose name is known against its program's rule.
func (s *scan) rules(cmd *command) {
	fam := family(cmd.name)
	r := rules[fam]
	if r == nil {
		return
	}
	// An argument only known at run time can be any option or path
	// ("$X" can be -rf, a=-rf; rm $a x), so a program that has rules
	// about its arguments is not passed with one.
	if argRules[fam] && fam != "git" { // gitRule knows where it matters
		// Under xargs or parallel the input supplies more arguments.
		fed := slices.Contains(cmd.via, "xargs") || slices.Contains(cmd.via, "parallel")
		for _, f := range cmd.fields {
			if fed || runtimeArg(f) {
				s.add(reasonDynamicArgs(fam))
				break
			}
		}
		if fed && len(cmd.fields) == 0 {
			s.add(reasonDynamicArgs(fam))
		}
	}
	r(s, cmd)
}

// runtimeArg reports whether an argument is only known at run time: it
// has a $X or $(...) part, or is a glob that may match a name starting
// with - (*, ?x: a file named -rf). A glob under a literal path (src/*.o)
// cannot be an option, and the rules read its text (/*).
func runtimeArg(f field) bool {
	if f.runtime {
		return true
	}
	return !f.lit && f.s != "" && strings.IndexByte("*?[", f.s[0]) >= 0
}

// code checks a string that will be run as shell code: a script it
// downloads is a remote script, text it takes from variables makes the
// code itself only known at run time, and what is known is read again as
// a command line.
func (s *scan) code(f field) {
	if s.downloadsIn(f) {
		s.add(reasonRemoteScript)
		return
	}
	if !f.lit {
		s.add(reasonDynamic)
	}
	s.c.check(f.s, s.depth+1)
}

// pipeline marks the stages of the pipeline st starts, with what each
// reads on stdin, and returns them; nil when st is no pipeline (or simple
// command) of its own.
func (s *scan) pipeline(st *syntax.Stmt) []*syntax.Stmt {
	switch c := st.Cmd.(type) {
	case *syntax.CallExpr:
		s.staged[st] = true
		return []*syntax.Stmt{st}
	case *syntax.BinaryCmd:
		if c.Op != syntax.Pipe && c.Op != syntax.PipeAll {
			return nil
		}
	default:
		return nil
	}
	var stages []*syntax.Stmt
	s.flatten(st, &stages)
	in := &pipeInput{}
	for i, stage := range stages {
		if i > 0 {
			in = &pipeInput{download: in.download || s.downloads(stages[i-1]), prev: stages[i-1]}
			s.feed(stage, in)
		}
	}
	return stages
}

// flatten lists the stages of a pipeline (a | b | c nests as (a | b) | c).
func (s *scan) flatten(st *syntax.Stmt, out *[]*syntax.Stmt) {
	s.staged[st] = true
	if b, ok := st.Cmd.(*syntax.BinaryCmd); ok && (b.Op == syntax.Pipe || b.Op == syntax.PipeAll) {
		s.flatten(b.X, out)
		s.flatten(b.Y, out)
		return
	}
	*out = append(*out, st)
}

// feed records that st reads in on stdin, and so does every statement of
// a compound command that st is ({ sh; }, while read l; do ...; done).
func (s *scan) feed(st *syntax.Stmt, in *pipeInput) {
	if st == nil || s.stdin[st] != nil {
		return
	}
	s.stdin[st] = in
	var inner []*syntax.Stmt
	switch c := st.Cmd.(type) {
	case *syntax.Block:
		inner = c.Stmts
	case *syntax.Subshell:
		inner = c.Stmts
	case *syntax.IfClause:
		for ; c != nil; c = c.Else {
			inner = append(inner, c.Cond...)
			inner = append(inner, c.Then...)
		}
	case *syntax.WhileClause:
		inner = append(append(inner, c.Cond...), c.Do...)
	case *syntax.ForClause:
		inner = c.Do
	case *syntax.CaseClause:
		for _, item := range c.Items {
			inner = append(inner, item.Stmts...)
		}
	case *syntax.TimeClause:
		inner = []*syntax.Stmt{c.Stmt}
	case *syntax.BinaryCmd:
		inner = []*syntax.Stmt{c.X, c.Y}
	}
	for _, in2 := range inner {
		s.feed(in2, in)
	}
}

// downloaders fetch from the network: what they print is not known here.
var downloaders = map[string]bool{"curl": true, "wget": true, "fetch": true, "aria2c": true, "http": true, "https": true}

// downloads reports whether a command in n (substitutions included)
// downloads from the network.
func (s *scan) downloads(n syntax.Node) bool {
	found := false
	syntax.Walk(n, func(n syntax.Node) bool {
		if call, ok := n.(*syntax.CallExpr); ok && len(call.Args) > 0 && downloaders[s.command(call).name] {
			found = true
		}
		return !found
	})
	return found
}

// downloadsIn is downloads for the words of a field.
func (s *scan) downloadsIn(f field) bool {
	for _, w := range f.words() {
		if s.downloads(w) {
			return true
		}
	}
	return false
}

// funcDecl flags a function that starts itself in the background or in a
// pipeline: a fork bomb (:(){ :|:& };:).
func (s *scan) funcDecl(fn *syntax.FuncDecl) {
	if fn.Name == nil || fn.Body == nil {
		return
	}
	name := fn.Name.Value
	syntax.Walk(fn.Body, func(n syntax.Node) bool {
		st, ok := n.(*syntax.Stmt)
		if !ok {
			return true
		}
		b, pipe := st.Cmd.(*syntax.BinaryCmd)
		if !st.Background && !(pipe && (b.Op == syntax.Pipe || b.Op == syntax.PipeAll)) {
			return true
		}
		if s.calls(st, name) {
			s.add(reasonForkBomb)
			return false
		}
		return true
	})
}

// calls reports whether n runs a command named name.
func (s *scan) calls(n syntax.Node, name string) bool {
	found := false
	syntax.Walk(n, func(n syntax.Node) bool {
		if call, ok := n.(*syntax.CallExpr); ok && len(call.Args) > 0 && call.Args[0].Lit() == name {
			found = true
		}
		return !found
	})
	return found
}

// redirects checks where a statement's output goes.
func (s *scan) redirects(rs []*syntax.Redirect) {
	for _, r := range rs {
		if r.Word == nil || !strings.Contains(r.Op.String(), ">") {
			continue
		}
		target := s.literalText(r.Word).s
		writeTarget(s, target)
		if (r.Op == syntax.RdrOut || r.Op == syntax.RdrClob || r.Op == syntax.RdrAll) && strings.HasSuffix(strings.ToLower(target), "_history") {
			s.add(reasonHistory)
		}
	}
}

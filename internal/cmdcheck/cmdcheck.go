// Package cmdcheck decides whether a shell command line needs a person's
// approval before it runs. It parses the line with a real shell parser
// (mvdan.cc/sh/v3/syntax) and holds every command the line would run —
// in pipelines, lists, subshells, functions, loop and if bodies, command
// and process substitutions, behind wrappers (sudo, env, nohup, timeout,
// xargs, ...), inside strings run as code (sh -c, su -c, eval, a
// here-document fed to a shell) and as the aliases defined before it
// expand it (alias.go) — against a table of dangerous operations modelled
// on Hermes Agent's dangerous-command patterns: recursive deletes, disk
// formatting and erasing, sudo, a downloaded script run by a shell, force
// pushes and remote deletes, SQL DROP, writes to /etc, ~/.ssh, shell
// startup files and the kernel's control files, signals to processes by
// name, loops that start jobs without bound, and more.
//
// Quoting is read the way the shell reads it (r'm', "rm", \rm, $'\x72m',
// rm${IFS}-rf, {rm,-rf,x} all run rm), and quoted text that is only data
// (grep -r 'rm -rf' docs/, echo "sudo") is not a command.
//
// # Security
//
// This is defence in depth, not a boundary: it reads the command line, not
// what the programs it starts will do. A script written to a file and then
// run by name or sourced (and the aliases and functions such a file
// defines), an interpreter's own code (python3 -c '...'), or a program
// that deletes files itself are not seen. What it cannot read for certain
// is flagged rather than passed: a command whose name is only known at run
// time ($X, $(...), a glob), a program that has rules (rm, chmod, git
// push, kill, ...) given an argument only known at run time, eval, a
// program fed to a shell or interpreter on stdin (or named as /dev/stdin
// or <(...)), an alias or renamed command it cannot follow (one defined
// in a block or from a variable, hash -p, BASH_ALIASES), a line that does
// not parse, and a line too long or too deeply nested to check. The line
// is read both as bash and as POSIX sh (dash, which is /bin/sh on Debian),
// and what either would run is checked.
package cmdcheck

import (
	"regexp"
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
	reasonChmodWorld      = "world-writable permissions (chmod 777, o+w)"
	reasonSetuid          = "makes a program run as its owner (chmod u+s, 4755)"
	reasonPermSystem      = "permission or ownership change of /, ~ or a system directory (chmod 777 /, chown /etc)"
	reasonChownToRoot     = "recursive ownership change to root (chown -R root)"
	reasonDiskErase       = "erases a disk or volume (blkdiscard, hdparm --security-erase, lvremove, zpool destroy)"
	reasonKernel          = "changes the running kernel (writes to /proc/sys, /proc/sysrq-trigger or /sys; sysctl -w; modprobe)"
	reasonSignalByName    = "signals processes by name or pattern (pkill, fuser -k, loginctl kill-user)"
	reasonSpawnLoop       = "starts background jobs in a loop without bound (while true; do ... & done)"
	reasonRemoteDelete    = "deletes on a remote (git push --delete, aws s3 rm --recursive, rclone purge, kubectl delete)"
	reasonGitHistory      = "rewrites or expires git history (git filter-branch, reflog expire, gc --prune=now)"
	reasonBranchDelete    = "force-deletes or overwrites a git branch (git branch -D, -M)"
	reasonUninstall       = "uninstalls packages (npm uninstall, pip uninstall, apt remove)"
	reasonContainers      = "stops, kills or removes containers or their data (docker stop/kill/rm, compose down, volume prune)"
	reasonDockerHost      = "points docker or podman at another daemon (-H, --context, DOCKER_HOST)"
	reasonMetadata        = "reaches the cloud metadata endpoint (instance credentials)"
	reasonShellStartup    = "writes to a shell startup file (~/.bashrc, ~/.profile, ...)"
	reasonCredentials     = "writes to a credential file (~/.netrc, ~/.pgpass, ~/.npmrc, ~/.pypirc, ...)"
	reasonEnvConfig       = "writes to an .env file or config.yaml (secrets, Hermes's config)"
	reasonGateway         = "stops, restarts or detaches the Hermes gateway (kills running agents)"

	// What the check cannot see through.
	reasonDynamic     = "runs a command whose name or code is only known at run time ($VAR, $(...), a glob)"
	reasonAlias       = "renames a command in a way the check cannot follow (an alias defined in a block or from a variable, hash -p, BASH_ALIASES)"
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

// CheckShellInput is [CheckShell] for a line that runs with input the
// caller gives it on stdin, which the check does not read (the WASI
// interpreter's subprocess.run(..., input=...) through terminal()): a
// shell or interpreter that would run what it reads there (sh, python3,
// cmd) is flagged as fed a program on stdin, as it is behind a pipe.
// Without this, subprocess.run(["sh"], input=b"rm -rf ~") was asked about
// as "sh", which needs no approval.
func CheckShellInput(cmd string, d Dialect) []string {
	c := &checker{stdinFed: true}
	if d == Cmd {
		c.checkCmd(cmd, 0)
	} else {
		c.check(cmd, 0)
		// Every statement of the line reads the input: a group behind a
		// pipe from a program the check does not read. A line that only
		// parses inside the group (one closing it early) was flagged as
		// unparseable above.
		c.check("cat | {\n"+cmd+"\n}", 0)
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
	// stdinFed: the line's stdin is input the caller gives (see
	// CheckShellInput); cmd.exe lines read it at the start of each
	// pipeline.
	stdinFed bool
	work     int // bytes parsed so far, re-read strings included
	seen     map[checked]bool
}

type checked struct {
	src     string
	depth   int
	dialect Dialect
	env     string
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
	c.checkIn(src, depth, nil)
}

// checkIn is check for code that parent's shell runs itself (eval,
// source, trap; nil: a shell of its own, or the line): the aliases parent
// defines apply to it, and one it defines would apply to parent's later
// lines, which the check cannot follow.
func (c *checker) checkIn(src string, depth int, parent *scan) {
	var inherited map[string][]aliasEntry // read only: a shared scan defines none
	env := ""
	if parent != nil {
		env = "shared " + parent.aliasKey()
		inherited = parent.aliases
	}
	if !c.enter(src, depth, Sh, env) {
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
		s := &scan{c: c, src: src, depth: depth, lang: lang, shared: parent != nil, aliases: inherited,
			stdin: map[*syntax.Stmt]*pipeInput{}, staged: map[*syntax.Stmt]bool{}, cmds: map[*syntax.CallExpr]*command{},
			top: map[*syntax.Stmt]bool{}, inFunc: map[*syntax.Stmt]bool{}, file: f}
		for _, st := range f.Stmts {
			s.top[st] = true
			s.collectAliases(st)
		}
		syntax.Walk(f, s.visit)
	}
	if !parsed {
		c.add(reasonUnparseable)
	}
}

// enter starts the check of src in dialect d at nesting depth, in a
// setting env (what it inherits; "" for none): false when there is nothing
// to do (empty, already checked, or over a bound, which is flagged).
func (c *checker) enter(src string, depth int, d Dialect, env string) bool {
	if strings.TrimSpace(src) == "" {
		return false
	}
	// Each dialect's reading finds the same strings run as code; one
	// check of each is enough (and keeps nested code from doubling per
	// level).
	key := checked{src, depth, d, env}
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
	// The metadata endpoint's address has no other use: anywhere in the
	// line (an argument, a variable, a script's code) it is the signal.
	if mentionsMetadata(src) {
		c.add(reasonMetadata)
	}
	return true
}

// mentionsMetadata reports whether src names a metadata endpoint
// (metadataRe, run only where one of the addresses appears).
func mentionsMetadata(src string) bool {
	if !strings.Contains(src, "169.254.169.254") && !strings.Contains(src, "100.100.100.200") &&
		!strings.Contains(src, "fd00:ec2::254") && !strings.Contains(strings.ToLower(src), "metadata.google.internal") {
		return false
	}
	return metadataRe.MatchString(src)
}

// metadataRe matches the cloud instance-metadata endpoints, which give
// any local process the machine's credentials: 169.254.169.254 (AWS,
// Azure, GCP, OpenStack), fd00:ec2::254 (AWS over IPv6),
// metadata.google.internal, 100.100.100.200 (Alibaba).
var metadataRe = regexp.MustCompile(`(?i)(?:^|[^\d.])(?:169\.254\.169\.254|100\.100\.100\.200)(?:$|[^\d.])|(?:^|[^\w.-])metadata\.google\.internal(?:$|[^\w.-])|fd00:ec2::254`)

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
	lang  syntax.LangVariant
	// shared: the source runs in the shell of the code that holds it
	// (eval, source, trap).
	shared bool
	// top marks the statements of the source's top level.
	top map[*syntax.Stmt]bool
	// inFunc marks the statements of function bodies: their stdin is
	// whatever the function's caller gives it.
	inFunc map[*syntax.Stmt]bool
	// aliases are the followed alias definitions by name (alias.go;
	// in a shared scan, its parent's, all of which apply), aliasHash
	// their hash, aliasDefs their values read, readings the alias
	// readings of each command.
	aliases   map[string][]aliasEntry
	aliasHash string
	aliasDefs map[string]aliasDef
	readings  map[*syntax.CallExpr][]*command
	// file is the parsed source; graph its functions and the commands
	// each runs (built on first use).
	file  *syntax.File
	graph map[string][]string
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
	case *syntax.WhileClause, *syntax.ForClause:
		s.loop(n)
	case *syntax.Assign, *syntax.ParamExp, *syntax.DeclClause:
		s.variables(n)
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
	if call, ok := st.Cmd.(*syntax.CallExpr); ok {
		// DOCKER_HOST=... docker, env DOCKER_HOST=..., export DOCKER_HOST=...
		for _, w := range call.Args {
			if t := s.literalText(w).s; slices.ContainsFunc(dockerHostVars, func(v string) bool { return strings.HasPrefix(t, v) }) {
				s.add(reasonDockerHost)
			}
		}
	}
	if call, ok := st.Cmd.(*syntax.CallExpr); ok && len(call.Args) > 0 {
		cmd := s.command(call)
		cmd.stmt = st
		s.run(cmd)
		// What it runs once aliases are expanded (alias.go).
		for _, alt := range s.aliasReadings(call) {
			alt.stmt = st
			s.run(alt)
		}
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
			if fam == "kill" && lastJob(f) {
				continue // its own background job
			}
			if fed || runtimeArg(f) {
				s.add(reasonDynamicArgs(fam))
				break
			}
		}
		if fed && len(cmd.fields) == 0 {
			s.add(reasonDynamicArgs(fam))
		}
	}
	if remoteRules[fam] != nil {
		// A subcommand only known at run time (kubectl $VERB, npm
		// "$@"): a run-time word or xargs' input before the first
		// literal operand.
		fed := slices.Contains(cmd.via, "xargs") || slices.Contains(cmd.via, "parallel")
		operand := false
		for _, f := range cmd.fields {
			if runtimeArg(f) {
				s.add(reasonDynamicArgs(fam))
				break
			}
			if operand = f.lit && !strings.HasPrefix(f.s, "-"); operand {
				break
			}
		}
		if fed && !operand {
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
	if s.codeOrigin(f) {
		s.c.check(f.s, s.depth+1)
	}
}

// sharedCode is code for a string run in this shell (trap, source): its
// aliases apply, and one it defines is flagged (checkIn).
func (s *scan) sharedCode(f field) {
	if s.codeOrigin(f) {
		s.c.checkIn(f.s, s.depth+1, s)
	}
}

// codeOrigin flags where code to be run comes from: a download (a remote
// script: nothing more to read) or variables (only known at run time). It
// reports whether the code's text is worth reading as a command line.
func (s *scan) codeOrigin(f field) bool {
	if s.downloadsIn(f) {
		s.add(reasonRemoteScript)
		return false
	}
	if !f.lit {
		s.add(reasonDynamic)
	}
	return true
}

// shellCode is code or sharedCode, as the program that runs f is a shell
// of its own or this one.
func (s *scan) shellCode(f field, kind prog) {
	if kind == progSource {
		s.sharedCode(f)
	} else {
		s.code(f)
	}
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
		if call, ok := n.(*syntax.CallExpr); ok && len(call.Args) > 0 && slices.ContainsFunc(s.names(call), func(name string) bool { return downloaders[name] }) {
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

// funcDecl checks a function definition: a function that starts itself
// (or a function that calls it back) in the background or in a pipeline
// is a fork bomb (:(){ :|:& };:), and its body reads whatever its caller
// pipes into it. The name of a function definition is alias-expanded too
// (alias r=rm; r() { ...; } defines rm).
func (s *scan) funcDecl(fn *syntax.FuncDecl) {
	if fn.Name == nil || fn.Body == nil {
		return
	}
	syntax.Walk(fn.Body, func(n syntax.Node) bool {
		if st, ok := n.(*syntax.Stmt); ok {
			s.inFunc[st] = true
		}
		return true
	})
	names := []string{fn.Name.Value}
	for _, a := range s.aliases[fn.Name.Value] {
		if !s.shared && a.pos >= int(fn.Pos().Offset()) {
			continue
		}
		d := s.aliasDef(a.value)
		if d.opaque || len(d.toks) != 1 || len(d.toks[0].fields) != 1 {
			s.add(reasonAlias)
			continue
		}
		names = append(names, d.toks[0].fields[0].s)
	}
	syntax.Walk(fn.Body, func(n syntax.Node) bool {
		st, ok := n.(*syntax.Stmt)
		if !ok {
			return true
		}
		b, pipe := st.Cmd.(*syntax.BinaryCmd)
		if !st.Background && !(pipe && (b.Op == syntax.Pipe || b.Op == syntax.PipeAll)) {
			return true
		}
		for _, called := range s.called(st) {
			if slices.ContainsFunc(names, func(name string) bool { return s.reaches(called, name) }) {
				s.add(reasonForkBomb)
				return false
			}
		}
		return true
	})
}

// reaches reports whether running the command from runs the function
// to: it is to, or a function of the source that calls it, directly or
// through others.
func (s *scan) reaches(from, to string) bool {
	if s.graph == nil {
		// Each function of the source and the commands its bodies run.
		s.graph = map[string][]string{}
		syntax.Walk(s.file, func(n syntax.Node) bool {
			if fn, ok := n.(*syntax.FuncDecl); ok && fn.Name != nil && fn.Body != nil {
				s.graph[fn.Name.Value] = append(s.graph[fn.Name.Value], s.called(fn.Body)...)
			}
			return true
		})
	}
	seen := map[string]bool{}
	queue := []string{from}
	for len(queue) > 0 {
		f := queue[0]
		queue = queue[1:]
		if f == to {
			return true
		}
		if !seen[f] {
			seen[f] = true
			queue = append(queue, s.graph[f]...)
		}
	}
	return false
}

// called lists the names of the commands n runs: as written (function
// names are case-sensitive), and as the rules read them (behind wrappers,
// aliases expanded).
func (s *scan) called(n syntax.Node) []string {
	var names []string
	syntax.Walk(n, func(n syntax.Node) bool {
		if call, ok := n.(*syntax.CallExpr); ok && len(call.Args) > 0 {
			names = append(append(names, call.Args[0].Lit()), s.names(call)...)
		}
		return true
	})
	return names
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

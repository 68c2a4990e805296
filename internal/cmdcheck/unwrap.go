package cmdcheck

import (
	"regexp"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// command is a simple command with its wrappers (sudo, env, nohup, xargs,
// ...) taken off: what actually runs.
type command struct {
	// name is the base name, lower-case, of the program that runs
	// (/bin/RM is rm), or "" when there is none (sudo alone, a=1).
	name string
	// dynamic: the name is only known at run time ($X, $(...), a glob).
	dynamic bool
	args    []string // its arguments, quotes removed
	fields  []field  // the same with what the shell knows about them
	// via lists the wrappers it was found behind, outermost first.
	via []string
	// privileged: a wrapper runs it as another user (sudo, su, doas).
	privileged bool
	// code holds strings a wrapper runs as shell code (su -c, env -S).
	code []field
	// stmt is the statement it runs in (for its redirections and stdin);
	// nil for a command found inside another's arguments (find -exec).
	stmt *syntax.Stmt
	// alts are the other commands the words may run, when a wrapper has
	// an option that may or may not take a value (nice --foo 5 rm: is 5
	// the command, or --foo's value?). Each is checked too.
	alts []*command
	// tooComplex: the wrappers had more readings than are checked.
	tooComplex bool
	// tooLong: the wrappers run more code than is checked.
	tooLong bool
}

// cmdName is the base name of a command word, lower-case: on a
// case-insensitive file system RM is rm.
func cmdName(w string) string {
	if i := strings.LastIndexAny(w, `/\`); i >= 0 {
		w = w[i+1:]
	}
	w = strings.ToLower(w)
	return strings.TrimSuffix(w, ".exe")
}

var versionedRe = regexp.MustCompile(`^(python|pypy|perl|ruby|php|lua|node)[0-9.]*$`)

// family maps a program name to the name its rules are filed under:
// python3.12 and pypy3 are python, mkfs.ext4 is mkfs, nodejs is node.
func family(name string) string {
	switch {
	case strings.HasPrefix(name, "mkfs.") || strings.HasPrefix(name, "mkfs_"):
		return "mkfs"
	case name == "nodejs":
		return "node"
	}
	if m := versionedRe.FindStringSubmatch(name); m != nil {
		if m[1] == "pypy" {
			return "python"
		}
		return m[1]
	}
	return name
}

func isAssignment(w string) bool {
	eq := strings.IndexByte(w, '=')
	if eq <= 0 {
		return false
	}
	for i, r := range w[:eq] {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// shellKeywords can appear as words after a wrapper (sudo ! rm) or come
// from a re-read string; they are not the command. time is a wrapper
// (/usr/bin/time, and the keyword in a shell that has none).
var shellKeywords = map[string]bool{"!": true, "{": true, "}": true, "if": true, "then": true, "else": true, "elif": true, "fi": true, "do": true, "done": true, "while": true, "until": true, "coproc": true}

// longOpt reports whether a is the long option --full or a GNU
// abbreviation of it (--recu for --recursive), with or without =VALUE.
// An ambiguous abbreviation counts too: it fails rather than runs, so
// flagging it costs nothing.
func longOpt(a string, full ...string) bool {
	name, ok := strings.CutPrefix(a, "--")
	if !ok {
		return false
	}
	name, _, _ = strings.Cut(name, "=")
	if name == "" {
		return false
	}
	for _, f := range full {
		if strings.HasPrefix(f, name) {
			return true
		}
	}
	return false
}

// wrapSpec says how a wrapper reads its options, so that the command it
// runs can be found. An option not listed may or may not take a value:
// every reading is checked.
type wrapSpec struct {
	values   string // short options that take a value (-n 5, -n5)
	flags    string // short options that take none
	optional string // short options whose value can only be attached (-i{})
	code     string // short options whose value is shell code (su -c)

	longValues, longFlags, longCode []string

	positional int  // operands before the command (timeout's duration)
	privileged bool // runs the command as another user
	assigns    bool // NAME=VALUE words before the command (env)
	permute    bool // code options may come after the operands (su root -c)
	joinsRest  bool // the code option's value and the rest are one command line (env -S)
	joined     bool // the command words are joined and run by a shell (watch, parallel)
	noCommand  bool // runs no command from its words, only code (su, script)
}

// wrappers run the command their arguments name.
var wrappers = map[string]*wrapSpec{
	"sudo": {values: "ugpChDrtURT", flags: "AbEeHiKklnPSsVvBN", privileged: true,
		longValues: []string{"user", "group", "prompt", "close-from", "chdir", "role", "type", "other-user", "command-timeout", "host", "chroot"},
		longFlags:  []string{"askpass", "background", "preserve-env", "edit", "set-home", "login", "remove-timestamp", "reset-timestamp", "list", "non-interactive", "preserve-groups", "stdin", "shell", "validate", "version", "bell", "no-update", "help"}},
	"doas":   {values: "uC", flags: "nsL", privileged: true},
	"pkexec": {longValues: []string{"user"}, longFlags: []string{"disable-internal-agent", "keep-cwd", "help", "version"}, privileged: true},
	"run0":   {privileged: true, longFlags: []string{"no-ask-password", "help", "version"}},
	"su": {values: "gGsw", flags: "lmpfPhV", code: "c", privileged: true, permute: true, noCommand: true,
		longCode: []string{"command", "session-command"}, longValues: []string{"group", "supp-group", "shell", "whitelist-environment"}},
	"runuser": {values: "ugGsw", flags: "lmpfPhV", code: "c", privileged: true, permute: true,
		longCode: []string{"command", "session-command"}, longValues: []string{"user", "group", "supp-group", "shell", "whitelist-environment"},
		longFlags: []string{"login", "preserve-environment", "pty", "help", "version"}},
	"env": {values: "uCa", flags: "i0v", code: "S", assigns: true, joinsRest: true,
		longValues: []string{"unset", "chdir", "argv0"}, longCode: []string{"split-string"},
		longFlags: []string{"ignore-environment", "null", "debug", "list-signal-handling", "block-signal", "default-signal", "ignore-signal", "help", "version"}},
	"nohup":     {longFlags: []string{"help", "version"}},
	"command":   {flags: "pvV"},
	"builtin":   {},
	"exec":      {values: "a", flags: "cl"},
	"setsid":    {flags: "cfw", longFlags: []string{"ctty", "fork", "wait", "help", "version"}},
	"unbuffer":  {flags: "p"},
	"busybox":   {},
	"catchsegv": {},
	"nocache":   {},
	"eatmydata": {},
	"fakeroot":  {longValues: []string{"lib", "faked"}, values: "lsi", flags: "u"},
	"stdbuf":    {values: "ioe", longValues: []string{"input", "output", "error"}, longFlags: []string{"help", "version"}},
	"nice":      {values: "n", flags: "0123456789", longValues: []string{"adjustment"}, longFlags: []string{"help", "version"}},
	"ionice": {values: "cnpPu", flags: "t", longValues: []string{"class", "classdata", "pid", "pgid", "uid"},
		longFlags: []string{"ignore", "help", "version"}},
	"timeout": {values: "sk", flags: "v", positional: 1, longValues: []string{"signal", "kill-after"},
		longFlags: []string{"preserve-status", "foreground", "verbose", "help", "version"}},
	"chroot": {positional: 1, longValues: []string{"userspec", "groups"}, longFlags: []string{"skip-chdir", "help", "version"}},
	"xargs": {values: "ILnPsdEa", flags: "0rtpxo", optional: "ile",
		longValues: []string{"max-args", "max-procs", "max-chars", "delimiter", "arg-file", "process-slot-var"},
		longFlags:  []string{"null", "no-run-if-empty", "verbose", "interactive", "exit", "open-tty", "show-limits", "replace", "max-lines", "eof", "help", "version"}},
	"time": {values: "fo", flags: "apqvV", longValues: []string{"format", "output"},
		longFlags: []string{"append", "portability", "verbose", "quiet", "help", "version"}},
	"flock": {values: "wE", flags: "sexnouvFh", code: "c", positional: 1, permute: true,
		longValues: []string{"timeout", "wait", "conflict-exit-code"}, longCode: []string{"command"},
		longFlags: []string{"shared", "exclusive", "unlock", "nonblock", "nb", "close", "no-fork", "verbose", "help", "version"}},
	"script": {values: "EIOBTmo", flags: "aefqVh", optional: "t", code: "c", permute: true, noCommand: true,
		longCode:   []string{"command"},
		longValues: []string{"echo", "log-in", "log-out", "log-io", "log-timing", "logging-format", "output-limit"},
		longFlags:  []string{"append", "return", "flush", "force", "quiet", "timing", "help", "version"}},
	"watch": {values: "nq", flags: "bcegtxprwhv", optional: "d", joined: true,
		longValues: []string{"interval", "equexit"},
		longFlags:  []string{"beep", "color", "no-color", "differences", "errexit", "chgexit", "no-title", "exec", "precise", "no-wrap", "no-linewrap", "help", "version"}},
	"parallel": {values: "jPSadEILnNsCX", flags: "0kqrtuvmgHe", joined: true,
		longValues: []string{"jobs", "sshlogin", "arg-file", "delimiter", "max-args", "max-replace-args", "max-chars", "colsep", "tagstring", "results", "joblog", "timeout", "delay", "memfree", "load", "env", "workdir", "basefile", "shebang-wrap", "retries", "halt"},
		longFlags:  []string{"keep-order", "quote", "null", "tag", "ungroup", "verbose", "dry-run", "progress", "eta", "bar", "pipe", "xargs", "group", "line-buffer", "no-notice", "citation", "help", "version"}},
	"sem":              {values: "jPS", flags: "0kqutv", joined: true, longValues: []string{"jobs", "id"}, longFlags: []string{"wait", "fg", "bg"}},
	"unshare":          {values: "SGRw", flags: "frc", optional: "muinpUCT", longValues: []string{"setuid", "setgid", "root", "wd", "propagation", "map-user", "map-group", "map-users", "map-groups", "setgroups", "monotonic", "boottime"}},
	"setpriv":          {flags: "dh", longValues: []string{"reuid", "regid", "groups", "inh-caps", "ambient-caps", "bounding-set", "securebits", "pdeathsig", "selinux-label", "apparmor-profile", "landlock-access", "landlock-rule", "ruid", "euid", "rgid", "egid"}, longFlags: []string{"dump", "nnp", "no-new-privs", "clear-groups", "keep-groups", "init-groups", "reset-env", "help", "version"}},
	"strace":           {values: "abeIoOpPsSuXEU", flags: "cCdDfFhiknqrtTvVwxyzZY"},
	"ltrace":           {values: "aADeFlnopsuwx", flags: "bcCfhiLrStTV"},
	"taskset":          {flags: "acp", positional: 1, longFlags: []string{"all-tasks", "cpu-list", "pid", "help", "version"}},
	"prlimit":          {values: "po", optional: "cdefilmnqrstuvxy", longValues: []string{"pid", "output"}, longFlags: []string{"noheadings", "raw", "verbose", "help", "version"}},
	"chrt":             {values: "TPD", flags: "abdefimoprRv", positional: 1, longValues: []string{"sched-runtime", "sched-period", "sched-deadline"}},
	"nsenter":          {values: "tSGe", flags: "FaZ", optional: "muinpUCTrw", longValues: []string{"target", "setuid", "setgid"}},
	"systemd-run":      {values: "upEMH", flags: "tPGqrdS", longValues: []string{"unit", "property", "setenv", "machine", "host", "description", "slice", "uid", "gid", "nice", "working-directory", "service-type", "on-active", "on-boot", "on-startup", "on-unit-active", "on-unit-inactive", "on-calendar", "timer-property", "path-property", "socket-property"}},
	"cpulimit":         {values: "lpeP", flags: "ikrzvbq", longValues: []string{"limit", "pid", "exe", "path", "cpu"}, longFlags: []string{"include-children", "kill", "restore", "lazy", "verbose", "background", "quiet", "help"}},
	"firejail":         {},
	"bwrap":            {},
	"valgrind":         {},
	"numactl":          {values: "CNmipPlw", flags: "abHs"},
	"cgexec":           {values: "g", longFlags: []string{"sticky"}},
	"xvfb-run":         {values: "fnpsew", flags: "ah", longValues: []string{"auth-file", "server-num", "xauth-protocol", "server-args", "error-file", "wait"}},
	"dbus-run-session": {},
	"dbus-launch":      {},
	"ssh-agent":        {values: "aEPt", flags: "cdDks"},
	"proxychains":      {values: "f", flags: "q"},
	"proxychains4":     {values: "f", flags: "q"},
	"torsocks":         {values: "uapP", flags: "diq"},
	"tsocks":           {},
	"trickle":          {values: "udwtlnL", flags: "sv"},
	"faketime":         {values: "mf", positional: 1},
	"setarch":          {flags: "vRFZLXBIST3", positional: 1},
	"linux32":          {flags: "vRFZLXBIST3"},
	"linux64":          {flags: "vRFZLXBIST3"},
	"systemd-inhibit":  {longValues: []string{"what", "who", "why", "mode"}},
	"chpst":            {values: "uUbenlmdofpc", flags: "PvV012"},
	"rlwrap":           {},
	"caffeinate":       {values: "tw", flags: "dimsu"},
	"sg":               {code: "c", positional: 1, permute: true, joined: true},
}

// unwrapper reads one command's words, following every reading of its
// wrappers' options.
type unwrapper struct {
	words      []field
	seen       map[int]bool // word indexes already read as a command's start
	queue      []pending
	code       []field
	codeAt     map[int]bool
	permuted   map[int]bool // words a permuted scan has read
	dynamicAt  map[int]bool // xargs -I{} {} ...: the name comes from the input
	privileged bool
	steps      int
	tooComplex bool
	tooLong    bool
	codeBytes  int   // bytes of code recorded, bounded by maxWork
	suffixLen  []int // restLen's table, built on first use
}

type pending struct {
	start int
	via   []string
}

// Bounds on the readings of one command's wrappers.
const (
	maxAlts  = 64
	maxSteps = 4096
)

// unwrap takes the wrappers off a simple command. It only reads: what the
// wrappers imply (sudo, su -c CODE) is recorded for the caller to judge.
func unwrap(words []field) *command {
	w := &unwrapper{words: words, seen: map[int]bool{}, codeAt: map[int]bool{}, dynamicAt: map[int]bool{}, permuted: map[int]bool{}}
	w.seen[0] = true
	root := w.from(0, nil)
	for len(w.queue) > 0 {
		if len(root.alts) == maxAlts {
			w.tooComplex = true
			break
		}
		p := w.queue[0]
		w.queue = w.queue[1:]
		root.alts = append(root.alts, w.from(p.start, p.via))
	}
	root.privileged = root.privileged || w.privileged
	root.code = w.code
	root.tooComplex = w.tooComplex
	root.tooLong = w.tooLong
	return root
}

// from reads the command starting at word i, behind the wrappers in via.
func (w *unwrapper) from(i int, via []string) *command {
	u := &command{via: slices.Clone(via)}
	for {
		for i < len(w.words) && w.words[i].lit && (isAssignment(w.words[i].s) || shellKeywords[w.words[i].s]) {
			i++
		}
		if i >= len(w.words) {
			u.name, u.dynamic, u.args, u.fields = "", false, nil, nil
			return u
		}
		u.name, u.dynamic = cmdName(w.words[i].s), !w.words[i].lit || w.dynamicAt[i]
		sp := wrappers[u.name]
		if u.dynamic || sp == nil {
			// Only now: a chain of wrappers would otherwise copy
			// the rest of the line once per wrapper.
			u.fields = w.words[i+1:]
			u.args = texts(u.fields)
			return u
		}
		if len(u.via) == 0 || u.via[len(u.via)-1] != u.name {
			u.via = append(u.via, u.name)
		}
		w.privileged = w.privileged || sp.privileged
		starts := w.wrapper(u.name, sp, i+1)
		if len(starts) == 0 {
			u.name, u.dynamic, u.args, u.fields = "", false, nil, nil
			return u
		}
		for _, s := range starts[1:] {
			if !w.seen[s] {
				w.seen[s] = true
				w.queue = append(w.queue, pending{s, slices.Clone(u.via)})
			}
		}
		i = starts[0]
		w.seen[i] = true
	}
}

// wrapper reads the options of a wrapper whose arguments start at word
// start, records the code it runs, and returns where the command it runs
// may start, the likeliest reading first.
func (w *unwrapper) wrapper(name string, sp *wrapSpec, start int) []int {
	if sp.permute {
		w.permutedCode(sp, start)
	}
	type state struct {
		i, k int
		done bool // after --
	}
	var starts []int
	seen := map[state]bool{}
	stack := []state{{start, sp.positional, false}}
	for len(stack) > 0 {
		st := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if st.i >= len(w.words) || seen[st] {
			continue
		}
		seen[st] = true
		if w.steps++; w.steps > maxSteps {
			w.tooComplex = true
			break
		}
		f := w.words[st.i]
		switch {
		case !st.done && f.lit && f.s == "--":
			stack = append(stack, state{st.i + 1, st.k, true})
		case !st.done && len(f.s) > 1 && f.s[0] == '-':
			next := w.option(sp, st.i)
			for j := len(next) - 1; j >= 0; j-- {
				stack = append(stack, state{next[j], st.k, false})
			}
		case sp.assigns && f.lit && strings.IndexByte(f.s, '=') > 0:
			// env takes any NAME=VALUE; BASH_FUNC_NAME%%=() { ...; }
			// is a function bash imports, so its body is code.
			if strings.HasPrefix(f.s, "BASH_FUNC_") {
				w.importedFunc(st.i)
			}
			stack = append(stack, state{st.i + 1, st.k, st.done})
		case st.k > 0:
			stack = append(stack, state{st.i + 1, st.k - 1, st.done})
		case !slices.Contains(starts, st.i):
			starts = append(starts, st.i)
		}
	}
	if name == "xargs" {
		w.xargsReplace(start, starts)
	}
	switch {
	case sp.noCommand:
		return nil
	case sp.joined:
		for _, s := range starts {
			w.joinedCode(name, s)
		}
		return nil
	}
	return starts
}

// option reads the option at word i and returns where the next word may
// be: after it, or after the one or two values it may take.
func (w *unwrapper) option(sp *wrapSpec, i int) []int {
	f := w.words[i]
	a := f.s
	unknown := []int{i + 1, i + 2, i + 3}
	if !f.lit {
		return unknown // -$X: any option
	}
	if strings.HasPrefix(a, "--") {
		_, val, attached := strings.Cut(a[2:], "=")
		isCode, isValue, isFlag := longOpt(a, sp.longCode...), longOpt(a, sp.longValues...), longOpt(a, sp.longFlags...)
		switch {
		case isCode && attached:
			w.addCode(sp, i, field{s: val, lit: f.lit, runtime: f.runtime, word: f.word})
		case isCode:
			w.addCode(sp, i+1, w.at(i+1))
		}
		switch {
		case attached:
			return []int{i + 1}
		case isCode || isValue && !isFlag:
			return []int{i + 2}
		case isFlag && !isValue:
			return []int{i + 1}
		}
		return unknown
	}
	for j := 1; j < len(a); j++ {
		c, rest := a[j], a[j+1:]
		switch {
		case strings.IndexByte(sp.code, c) >= 0:
			if rest != "" {
				w.addCode(sp, i, field{s: rest, lit: f.lit, runtime: f.runtime, word: f.word})
				return []int{i + 1}
			}
			w.addCode(sp, i+1, w.at(i+1))
			return []int{i + 2}
		case strings.IndexByte(sp.values, c) >= 0:
			if rest != "" {
				return []int{i + 1}
			}
			return []int{i + 2}
		case strings.IndexByte(sp.optional, c) >= 0:
			return []int{i + 1}
		case strings.IndexByte(sp.flags, c) >= 0:
		default:
			return unknown
		}
	}
	return []int{i + 1}
}

// at is word i, or an empty field past the end.
func (w *unwrapper) at(i int) field {
	if i < len(w.words) {
		return w.words[i]
	}
	return field{lit: true}
}

// addCode records the code a wrapper's option gives, once per word; env
// -S runs its string with the words after it as one command line.
func (w *unwrapper) addCode(sp *wrapSpec, i int, f field) {
	if i >= len(w.words) || w.codeAt[i] {
		return
	}
	w.codeAt[i] = true
	if sp.joinsRest {
		// env -S splits its string itself; \_ is a space to it.
		f.s = strings.ReplaceAll(f.s, `\_`, " ")
		if !w.spend(len(f.s) + w.restLen(i+1)) {
			return
		}
		f = joinFields(append([]field{f}, w.words[i+1:]...))
	} else if !w.spend(len(f.s)) {
		return
	}
	w.code = append(w.code, f)
}

// importedFunc records the function an environment word
// BASH_FUNC_NAME%%=() { BODY; } defines in the bash it reaches, as the
// code NAME() { BODY; }.
func (w *unwrapper) importedFunc(i int) {
	if w.codeAt[i] {
		return
	}
	w.codeAt[i] = true
	f := w.words[i]
	name, value, _ := strings.Cut(strings.TrimPrefix(f.s, "BASH_FUNC_"), "=")
	name = strings.TrimSuffix(strings.TrimSuffix(name, "%%"), "()")
	if !w.spend(len(name) + len(value)) {
		return
	}
	w.code = append(w.code, field{s: name + value, lit: f.lit, runtime: f.runtime, word: f.word})
}

// spend counts n bytes of code towards maxWork, and reports whether they
// fit: env -S -S -S ... would otherwise join the rest of a long line
// once per option.
func (w *unwrapper) spend(n int) bool {
	w.codeBytes += n
	if w.codeBytes > maxWork {
		w.tooLong = true
		return false
	}
	return true
}

// restLen is the length of words[i:] joined with spaces.
func (w *unwrapper) restLen(i int) int {
	if w.suffixLen == nil {
		w.suffixLen = make([]int, len(w.words)+1)
		for j := len(w.words) - 1; j >= 0; j-- {
			w.suffixLen[j] = w.suffixLen[j+1] + len(w.words[j].s) + 1
		}
	}
	return w.suffixLen[min(i, len(w.words))]
}

// permutedCode finds code options anywhere in a wrapper's arguments (su
// root -c CODE, flock FILE -c CODE): these read options after operands.
func (w *unwrapper) permutedCode(sp *wrapSpec, start int) {
	// A scan that reaches a word an outer wrapper's scan has read goes
	// on as that one did, to the same -- or the end.
	for i := start; i < len(w.words) && !w.permuted[i]; i++ {
		w.permuted[i] = true
		a := w.words[i].s
		if a == "--" {
			return
		}
		if len(a) > 1 && a[0] == '-' && w.words[i].lit {
			w.option(sp, i)
		}
	}
}

// joinedCode records what a wrapper that joins its command words into a
// shell command line runs (watch CMD..., parallel CMD ::: ARGS, sg GROUP
// CMD): parallel appends its inputs, so they are read as arguments.
func (w *unwrapper) joinedCode(name string, start int) {
	if w.codeAt[start] {
		return
	}
	w.codeAt[start] = true
	if !w.spend(w.restLen(start)) {
		return
	}
	words := w.words[start:]
	var inputs []field
	if name == "parallel" || name == "sem" {
		for j, f := range words {
			if f.lit && strings.HasPrefix(f.s, ":::") {
				words, inputs = words[:j], words[j:]
				break
			}
		}
	}
	if len(words) == 0 {
		return
	}
	code := joinFields(words)
	// The inputs are quoted by parallel: they add arguments (parallel rm
	// ::: -rf x), never shell syntax, so they do not make the line itself
	// only known at run time.
	for _, f := range inputs {
		if !strings.HasPrefix(f.s, ":::") {
			code.s += " " + f.s
		}
	}
	w.code = append(w.code, code)
}

// xargsReplace: with -I/-i, a command name that contains the replace
// string is filled from xargs' input, so it is only known at run time.
func (w *unwrapper) xargsReplace(start int, starts []int) {
	replace := ""
	for i := start; i < len(w.words) && strings.HasPrefix(w.words[i].s, "-") && w.words[i].s != "--"; i++ {
		a := w.words[i].s
		switch {
		case a == "-I" && i+1 < len(w.words):
			replace = w.words[i+1].s
		case strings.HasPrefix(a, "-I"):
			replace = a[2:]
		case a == "-i" || a == "--replace":
			replace = "{}"
		case strings.HasPrefix(a, "-i"):
			replace = a[2:]
		case strings.HasPrefix(a, "--replace="):
			replace = strings.TrimPrefix(a, "--replace=")
		}
		if len(a) == 2 && strings.Contains(wrappers["xargs"].values, a[1:]) {
			i++ // the option's value
		}
	}
	if replace == "" {
		return
	}
	for _, s := range starts {
		if strings.Contains(w.words[s].s, replace) {
			w.dynamicAt[s] = true
		}
	}
}

func texts(fs []field) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.s
	}
	return out
}

// joinFields joins fields with spaces, as a shell re-reading them would
// see them.
func joinFields(fs []field) field {
	j := field{s: strings.Join(texts(fs), " "), lit: true}
	for _, f := range fs {
		j.lit = j.lit && f.lit
		j.runtime = j.runtime || f.runtime
		j.joined = append(j.joined, f.words()...)
	}
	return j
}

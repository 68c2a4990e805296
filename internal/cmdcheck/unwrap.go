package cmdcheck

import (
	"regexp"
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

// shellKeywords can appear as words after a wrapper (sudo time rm) or
// come from a re-read string; they are not the command.
var shellKeywords = map[string]bool{"!": true, "{": true, "}": true, "if": true, "then": true, "else": true, "elif": true, "fi": true, "do": true, "done": true, "while": true, "until": true, "time": true, "coproc": true}

// skipOptions skips leading options of a wrapper; withArg lists the options
// that take the next word as their value.
func skipOptions(args []field, withArg string) []field {
	for len(args) > 0 && strings.HasPrefix(args[0].s, "-") && args[0].s != "-" {
		a := args[0].s
		args = args[1:]
		if a == "--" {
			break
		}
		if !strings.HasPrefix(a, "--") && len(a) == 2 && strings.Contains(withArg, a[1:]) && len(args) > 0 {
			args = args[1:]
		}
	}
	return args
}

// wrapperValueOptions lists, per wrapper, the short options that take the
// next word as their value (nice -n 5, exec -a NAME).
var wrapperValueOptions = map[string]string{"exec": "a", "stdbuf": "ioe", "nice": "n", "ionice": "cnp"}

// unwrap takes the wrappers off a simple command. It only reads: what the
// wrappers imply (sudo, su -c CODE) is recorded for the caller to judge.
func unwrap(words []field) *command {
	u := &command{}
	for {
		for len(words) > 0 && words[0].lit && (isAssignment(words[0].s) || shellKeywords[words[0].s]) {
			words = words[1:]
		}
		if len(words) == 0 {
			u.name, u.dynamic = "", false
			u.args, u.fields = nil, nil
			return u
		}
		u.name, u.dynamic = cmdName(words[0].s), !words[0].lit
		u.fields = words[1:]
		u.args = texts(u.fields)
		if u.dynamic {
			return u
		}
		next, wrapper := u.unwrapOne()
		if !wrapper {
			return u
		}
		if len(u.via) == 0 || u.via[len(u.via)-1] != u.name {
			u.via = append(u.via, u.name)
		}
		words = next
	}
}

// unwrapOne returns the words a wrapper named u.name runs, and false when
// u.name is no wrapper.
func (u *command) unwrapOne() ([]field, bool) {
	args := u.fields
	switch u.name {
	case "sudo", "doas", "pkexec", "run0":
		u.privileged = true
		return skipOptions(args, "ugpChDrtUT"), true
	case "su":
		u.privileged = true
		for i, a := range args {
			if (a.s == "-c" || a.s == "--command") && i+1 < len(args) {
				u.code = append(u.code, args[i+1])
			} else if v, ok := strings.CutPrefix(a.s, "--command="); ok {
				u.code = append(u.code, field{s: v, lit: a.lit, word: a.word})
			}
		}
		return nil, false
	case "env":
		return u.envArgs(args)
	case "nohup", "command", "builtin", "exec", "setsid", "unbuffer", "busybox", "stdbuf", "nice", "ionice":
		return skipOptions(args, wrapperValueOptions[u.name]), true
	case "timeout":
		rest := skipOptions(args, "sk")
		if len(rest) > 0 {
			rest = rest[1:] // the duration
		}
		return rest, true
	case "chroot":
		rest := skipOptions(args, "")
		if len(rest) > 0 {
			rest = rest[1:] // the new root
		}
		return rest, true
	case "xargs":
		return xargsArgs(args), true
	}
	return nil, false
}

// envArgs skips env's options and assignments; env -S STRING runs STRING
// as a command line.
func (u *command) envArgs(rest []field) ([]field, bool) {
	for len(rest) > 0 {
		a := rest[0].s
		switch {
		case a == "-S" || a == "--split-string":
			if len(rest) > 1 {
				u.code = append(u.code, joinFields(rest[1:]))
			}
			return nil, false
		case a == "-u" || a == "-C" || a == "--unset" || a == "--chdir":
			rest = rest[min(2, len(rest)):]
		case a == "--":
			rest = rest[1:]
		case strings.HasPrefix(a, "-") || rest[0].lit && isAssignment(a):
			rest = rest[1:]
		default:
			return rest, true
		}
	}
	return rest, true
}

// xargsArgs skips xargs' options. With -I/-i the command it runs may
// contain the replace string, filled from its input: a name that does is
// only known at run time.
// xargsValueOptions take the next word as their value (-i, -l and -e
// only take one attached: -i{}).
const xargsValueOptions = "ILnPsdEa"

func xargsArgs(args []field) []field {
	replace := ""
	// Only xargs' own options, before the command it runs.
	for i := 0; i < len(args) && strings.HasPrefix(args[i].s, "-") && args[i].s != "--"; i++ {
		a := args[i].s
		switch {
		case a == "-I" && i+1 < len(args):
			replace = args[i+1].s
		case strings.HasPrefix(a, "-I"):
			replace = a[2:]
		case a == "-i" || a == "--replace":
			replace = "{}"
		case strings.HasPrefix(a, "-i"):
			replace = a[2:]
		case strings.HasPrefix(a, "--replace="):
			replace = strings.TrimPrefix(a, "--replace=")
		}
		if len(a) == 2 && strings.Contains(xargsValueOptions, a[1:]) {
			i++ // the option's value
		}
	}
	rest := skipOptions(args, xargsValueOptions)
	if replace != "" && len(rest) > 0 && strings.Contains(rest[0].s, replace) {
		rest = append([]field{{s: rest[0].s, word: rest[0].word}}, rest[1:]...)
	}
	return rest
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
		j.joined = append(j.joined, f.words()...)
	}
	return j
}

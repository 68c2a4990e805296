package cmdcheck

import (
	"slices"
	"strings"
)

// rule checks one program's arguments (after its wrappers are taken off).
type rule func(s *scan, cmd *command)

// rules maps a program family (see family) to its rule. It is filled in
// init because some rules run the rules again (find -exec, sh -c).
var rules map[string]rule

func init() {
	rules = map[string]rule{}
	for _, table := range []map[string]rule{fileRules, systemRules, codeRules} {
		for name, r := range table {
			rules[name] = r
		}
	}
	rules["git"] = gitRule
	rules["find"] = findRule
}

// positional drops the options (words starting with "-") of args.
func positional(args []string) []string {
	var out []string
	opts := true
	for _, a := range args {
		if opts && a == "--" {
			opts = false
			continue
		}
		if opts && strings.HasPrefix(a, "-") && a != "-" {
			continue
		}
		out = append(out, a)
	}
	return out
}

// shortFlag reports whether a is a short-option cluster containing one of
// the letters.
func shortFlag(a, letters string) bool {
	return len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.ContainsAny(a[1:], letters)
}

func gitRule(s *scan, cmd *command) {
	args := cmd.args
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		switch a := args[0]; a {
		case "-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path", "--config-env":
			args = args[min(2, len(args)):]
		default:
			args = args[1:]
		}
	}
	if len(args) == 0 {
		return
	}
	sub, rest := strings.ToLower(args[0]), args[1:]
	switch sub {
	case "push":
		for _, a := range rest {
			if a == "--force" || a == "--mirror" || strings.HasPrefix(a, "--force-with-lease") || a == "--force-if-includes" ||
				shortFlag(a, "f") || (strings.HasPrefix(a, "+") && len(a) > 1) {
				s.add(reasonForcePush)
			}
		}
	case "reset":
		if slices.Contains(rest, "--hard") {
			s.add(reasonResetHard)
		}
	case "clean":
		for _, a := range rest {
			if a == "--force" || shortFlag(a, "f") {
				s.add(reasonGitClean)
			}
		}
	}
}

// findRule: find -delete, and the command find -exec runs on each match.
func findRule(s *scan, cmd *command) {
	for i := 0; i < len(cmd.fields); i++ {
		switch cmd.fields[i].s {
		case "-delete":
			s.add(reasonFindDelete)
		case "-exec", "-execdir", "-ok", "-okdir":
			end := i + 1
			for end < len(cmd.fields) && cmd.fields[end].s != ";" && cmd.fields[end].s != "+" {
				end++
			}
			s.findExec(cmd.fields[i+1 : end])
			i = end
		}
	}
}

func (s *scan) findExec(words []field) {
	sub := unwrap(words)
	switch sub.name {
	case "rm", "shred", "unlink", "rmdir":
		s.add(reasonFindDelete)
	case "{}":
		// find runs each file it matches.
		sub.dynamic = true
	}
	s.run(sub)
}

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
	for _, table := range []map[string]rule{fileRules, systemRules, codeRules, remoteRules} {
		for name, r := range table {
			rules[name] = r
		}
	}
	rules["git"] = gitRule
	rules["find"] = findRule
	rules["tar"] = tarRule
	rules["bsdtar"] = tarRule
	rules["gtar"] = tarRule
	rules["zip"] = zipRule
	argRules = map[string]bool{}
	for _, table := range []map[string]rule{fileRules, systemRules} {
		for name := range table {
			argRules[name] = true
		}
	}
	for _, name := range []string{"git", "find", "tar", "bsdtar", "gtar", "zip"} {
		argRules[name] = true
	}
}

// argRules are the programs whose rules read their arguments: one only
// known at run time is flagged. Shells and interpreters are not among
// them (python script.py "$f" is fine); their code is checked instead.
var argRules map[string]bool

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
	aliases := map[string]string{}
	pathValue := map[int]bool{}
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		a := args[0]
		pathAt := -1
		switch {
		case a == "-c" && len(args) > 1:
			gitConfig(s, cmd, args[1], aliases)
			args = args[2:]
		case longOpt(a, "config-env") && !strings.Contains(a, "="):
			if len(args) > 1 {
				gitConfigEnv(s, args[1])
			}
			args = args[min(2, len(args)):]
		case longOpt(a, "config-env"):
			_, v, _ := strings.Cut(a, "=")
			gitConfigEnv(s, v)
			args = args[1:]
		case a == "-C" || longOpt(a, "git-dir", "work-tree", "namespace", "exec-path", "super-prefix", "list-cmds", "attr-source") && !strings.Contains(a, "="):
			// A directory or name: only known at run time is fine.
			pathAt = len(cmd.args) - len(args) + 1
			args = args[min(2, len(args)):]
		default:
			args = args[1:]
		}
		if pathAt >= 0 {
			pathValue[pathAt] = true
		}
	}
	// An argument only known at run time matters where it can change
	// what runs: before the subcommand (git $X, git -c "$KV" ...), or
	// for a subcommand that has rules (git push $OPTS). git commit -m
	// "$(...)" is fine.
	subAt := len(cmd.args) - len(args)
	if len(args) > 0 {
		_, aliased := aliases[strings.ToLower(args[0])]
		switch strings.ToLower(args[0]) {
		case "push", "reset", "clean", "rm", "config":
			aliased = true
		}
		if aliased {
			subAt = len(cmd.args)
		}
	}
	for i, f := range cmd.fields {
		if i <= subAt && runtimeArg(f) && !pathValue[i] {
			s.add(reasonDynamicArgs("git"))
			break
		}
	}
	if len(args) == 0 {
		return
	}
	sub, rest := strings.ToLower(args[0]), args[1:]
	if v, ok := aliases[sub]; ok && !strings.HasPrefix(v, "!") {
		// git -c alias.p='push --force' p: the alias is the command.
		expanded := append(strings.Fields(v), rest...)
		if len(expanded) == 0 {
			return
		}
		sub, rest = strings.ToLower(expanded[0]), expanded[1:]
	}
	gitSubcommand(s, cmd, sub, rest)
}

// gitSubcommand checks what a git subcommand does with its arguments.
func gitSubcommand(s *scan, cmd *command, sub string, rest []string) {
	has := func(short string, long ...string) bool {
		for _, a := range rest {
			if a == "--" {
				break
			}
			if short != "" && shortFlag(a, short) || longOpt(a, long...) {
				return true
			}
		}
		return false
	}
	switch sub {
	case "push":
		for _, a := range rest {
			if longOpt(a, "force", "mirror", "force-with-lease", "force-if-includes") ||
				shortFlag(a, "f") || (strings.HasPrefix(a, "+") && len(a) > 1) {
				s.add(reasonForcePush)
			}
			// --delete, -d, a refspec with no source (:branch) and
			// --prune delete remote refs; --mirror does both.
			if longOpt(a, "delete", "prune", "mirror") || shortFlag(a, "d") ||
				(strings.HasPrefix(a, ":") || strings.HasPrefix(a, "+:")) && len(strings.TrimLeft(a, "+:")) > 0 {
				s.add(reasonRemoteDelete)
			}
		}
	case "reset":
		if has("", "hard") {
			s.add(reasonResetHard)
		}
	case "clean":
		if has("f", "force") {
			s.add(reasonGitClean)
		}
	case "rm":
		// git rm -r deletes a tree from the work tree (--cached only
		// from the index; -n is a dry run).
		if has("r") && !has("n", "cached", "dry-run") {
			s.add(reasonRecursiveDelete)
		}
	case "checkout", "restore":
		// Whole-tree pathspecs (., :/, *) and --force throw away the
		// changes of the work tree; restore --staged alone only
		// unstages.
		staged := sub == "restore" && has("S", "staged") && !has("W", "worktree")
		if !staged && (has("f", "force") || slices.ContainsFunc(positional(rest), broadPathspec)) {
			s.add(reasonResetHard)
		}
	case "switch":
		if has("f", "force", "discard-changes") {
			s.add(reasonResetHard)
		}
	case "stash":
		if pos := positional(rest); len(pos) > 0 && (pos[0] == "drop" || pos[0] == "clear") {
			s.add(reasonResetHard)
		}
	case "worktree":
		if pos := positional(rest); len(pos) > 0 && pos[0] == "remove" && has("f", "force") {
			s.add(reasonResetHard)
		}
	case "branch":
		// -D is -d --force; -M and -C overwrite the target branch.
		if has("DMC") || has("d", "delete") && has("f", "force") {
			s.add(reasonBranchDelete)
		}
	case "update-ref":
		if has("d") {
			s.add(reasonBranchDelete)
		}
	case "filter-branch", "filter-repo":
		s.add(reasonGitHistory)
	case "reflog":
		if pos := positional(rest); len(pos) > 0 && (pos[0] == "expire" || pos[0] == "delete") {
			s.add(reasonGitHistory)
		}
	case "gc", "prune":
		for _, a := range rest {
			if v, ok := strings.CutPrefix(a, "--prune="); ok && (v == "now" || v == "all") || sub == "prune" && longOpt(a, "expire") {
				s.add(reasonGitHistory)
			}
		}
	case "config":
		gitConfigCommand(s, cmd, rest)
	}
}

// broadPathspec reports whether a git pathspec names the whole tree (or
// everything in a directory): ., :/, *, ./, a broad path.
func broadPathspec(p string) bool {
	return p == ":/" || p == ":" || strings.HasPrefix(p, ":(top)") || broadPath(p)
}

// gitConfigCommand reads git config KEY VALUE (and git config set KEY
// VALUE): the setting lasts beyond this command, so what it makes git run
// later is judged now: an alias (one that runs shell code, or one whose
// git command the rules flag: alias.p 'push --force'), and the settings
// that name a command line.
func gitConfigCommand(s *scan, cmd *command, rest []string) {
	var pos []string
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		switch {
		case a == "-f" || a == "--file" || a == "--blob" || a == "--type" || a == "--default" || a == "--comment" || a == "--value":
			i++
		case a == "--unset" || a == "--unset-all" || a == "--get" || a == "--get-all" || a == "--get-regexp" ||
			a == "-l" || a == "--list" || a == "--remove-section" || a == "--rename-section" || a == "-e" || a == "--edit":
			return
		case strings.HasPrefix(a, "-"):
		default:
			pos = append(pos, a)
		}
	}
	if len(pos) > 0 {
		switch pos[0] {
		case "set":
			pos = pos[1:]
		case "get", "list", "unset", "edit", "rename-section", "remove-section":
			return
		}
	}
	if len(pos) < 2 {
		return
	}
	key, value := strings.ToLower(pos[0]), pos[1]
	if strings.HasPrefix(key, "alias.") && !strings.HasPrefix(value, "!") {
		// The alias as the git command it stands for.
		if words := strings.Fields(value); len(words) > 0 {
			gitSubcommand(s, cmd, strings.ToLower(words[0]), words[1:])
		}
		return
	}
	gitConfig(s, cmd, key+"="+value, map[string]string{})
}

// gitCodeKeys are settings whose value git runs as a command line (the
// last part of the key; a few are subsections: diff.<driver>.textconv).
var gitCodeKeys = []string{"sshcommand", "pager", "editor", "fsmonitor", "askpass", "gitproxy", "external",
	"textconv", "command", "driver", "clean", "smudge", "process", "helper", "program", "packobjectshook", "cmd"}

// gitConfig reads git -c KEY=VALUE: an alias whose value starts with !
// runs that shell code, and so do the settings that name a command.
func gitConfig(s *scan, cmd *command, kv string, aliases map[string]string) {
	key, value, _ := strings.Cut(kv, "=")
	key = strings.ToLower(key)
	parts := strings.Split(key, ".")
	last := parts[len(parts)-1]
	code, isCode := strings.CutPrefix(value, "!")
	switch {
	case parts[0] == "alias" && len(parts) > 1:
		aliases[strings.Join(parts[1:], ".")] = value
		if !isCode {
			return
		}
	case parts[0] == "pager" || slices.Contains(gitCodeKeys, last):
		// Often a plain program (core.pager=less): its text is
		// checked as the command line git runs.
		code, isCode = value, false
	default:
		return
	}
	if isCode {
		s.add(reasonGitCode)
	}
	f := field{s: code, lit: true}
	for _, cf := range cmd.fields {
		if strings.Contains(cf.s, kv) {
			f.lit, f.runtime, f.word = cf.lit, cf.runtime, cf.word
			break
		}
	}
	s.code(f)
}

// gitConfigEnv reads git --config-env KEY=ENVVAR: the value comes from
// the environment, so a setting that runs code runs code only known at
// run time.
func gitConfigEnv(s *scan, kv string) {
	key, _, _ := strings.Cut(strings.ToLower(kv), "=")
	parts := strings.Split(key, ".")
	if parts[0] == "alias" || parts[0] == "pager" || slices.Contains(gitCodeKeys, parts[len(parts)-1]) {
		s.add(reasonDynamic)
	}
}

// tarRule: tar --remove-files deletes what it archives, and
// --recursive-unlink empties directories before extracting over them;
// --to-command, -I (--use-compress-program), -F (--info-script) and
// --checkpoint-action=exec= run a command line.
func tarRule(s *scan, cmd *command) {
	for _, a := range cmd.args {
		if longOpt(a, "remove-files", "recursive-unlink") {
			s.add(reasonTarRemove)
		}
	}
	// Old-style and short options have no letter for either.
	optionCode(s, cmd, "IF", "to-command", "use-compress-program", "info-script", "new-volume-script", "rsh-command")
	for _, f := range cmd.fields {
		if _, v, ok := strings.Cut(f.s, "="); ok && longOpt(f.s, "checkpoint-action") {
			if code, ok := strings.CutPrefix(v, "exec="); ok {
				s.code(field{s: code, lit: f.lit, runtime: f.runtime, word: f.word})
			}
		}
	}
}

// zipRule: zip -m (--move) deletes the files it archives; -TT
// (--unzip-command) runs a command line to test the archive.
func zipRule(s *scan, cmd *command) {
	for i, a := range cmd.args {
		if a == "--" {
			break
		}
		if a == "-TT" && i+1 < len(cmd.fields) {
			s.code(cmd.fields[i+1])
			continue
		}
		if shortFlag(a, "m") || longOpt(a, "move") {
			s.add(reasonZipMove)
		}
	}
	optionCode(s, cmd, "", "unzip-command")
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

package cmdcheck

import (
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// This file follows aliases: alias r=rm, then r -rf x runs rm -rf x in
// dash (/bin/sh on Debian), in bash as sh (its POSIX mode, /bin/sh on
// macOS and Fedora) and in any bash after shopt -s expand_aliases. No
// option of dash turns alias expansion off, and a remote backend runs
// whatever sh its target has, so the check reads what the aliases make of
// a command rather than relying on the shell not to expand them.
//
// How the shells expand (tested against dash and bash --posix): an alias
// defined by one line applies from the next line on (a line is parsed
// before it runs, so alias r=rm; r -rf x on one line runs r); an unquoted
// literal word in command position is looked up (\r, 'r' and "r" are
// not); the first word of the value is looked up again, except an alias
// already being expanded; a value ending in a blank makes the next word a
// command name too (alias s='sudo '); unalias, or a second definition, on
// the line that uses the alias comes too late to change it.
//
// So every alias definition of a line's top-level statements is followed,
// and a command is checked as written and in every way the definitions
// before it may expand it (each value of a name redefined, none or one of
// each alias in a chain): what the shell runs is one of those readings,
// whichever line each definition sat on. unalias is ignored (the readings
// with the alias are kept). What cannot be followed is flagged: a
// definition in a block, a loop, a condition, a function, a subshell or a
// pipeline (whether and when it runs is not known), one whose name or
// value is only known at run time, one in code run in the same shell later
// (eval, source, trap), an alias whose value is more than words (;, |,
// &&, a redirection, a keyword, a newline), and the other ways to rename a
// command (hash -p, BASH_ALIASES, BASH_CMDS, enable -f).

// aliasEntry is one followed alias definition: NAME=VALUE at offset pos of
// the source that defines it. Code run later in the same shell (a shared
// scan) inherits all of them.
type aliasEntry struct {
	name, value string
	pos         int
}

// aliasDef is an alias value as the shell reads it in place of the name.
type aliasDef struct {
	toks []atok
	// blank: the value ends in a blank (or is empty), so the word after
	// it is read as a command name too.
	blank bool
	// opaque: the value is more than words; it is not followed.
	opaque bool
}

// atok is a word as alias expansion sees it: the fields the shell makes
// of it, and the text it may name an alias by (an unquoted literal), or
// "".
type atok struct {
	fields []field
	name   string
}

// Bounds on the readings of one command: the alias expansions followed,
// and the readings checked.
const (
	maxAliasSteps    = 64
	maxAliasReadings = 16
)

// aliasName is the text a word names an alias by: the word as written
// when it is one unquoted literal without a backslash, else "".
func aliasName(w *syntax.Word) string {
	if len(w.Parts) != 1 {
		return ""
	}
	l, ok := w.Parts[0].(*syntax.Lit)
	if !ok || strings.Contains(l.Value, `\`) {
		return ""
	}
	return l.Value
}

// collectAliases records the alias definitions of a top-level statement
// (alias, command alias, builtin alias), before the walk, so that a
// command anywhere after it is read with them.
func (s *scan) collectAliases(st *syntax.Stmt) {
	call, ok := st.Cmd.(*syntax.CallExpr)
	if !ok || len(call.Args) == 0 || s.shared {
		return
	}
	cmd := s.command(call)
	if cmd.name != "alias" || cmd.dynamic {
		return
	}
	for _, f := range cmd.fields {
		name, value, ok := strings.Cut(f.s, "=")
		if ok && name != "" && f.lit {
			s.defineAlias(aliasEntry{name: name, value: value, pos: int(call.Pos().Offset())})
		}
	}
}

// defineAlias adds a followed definition (once: the same name and value
// again reads the same).
func (s *scan) defineAlias(a aliasEntry) {
	for _, b := range s.aliases[a.name] {
		if b.value == a.value {
			return
		}
	}
	if s.aliases == nil {
		s.aliases = map[string][]aliasEntry{}
	}
	s.aliases[a.name] = append(s.aliases[a.name], a)
}

// aliasKey identifies the aliases code run in this shell inherits
// (checkIn): a hash of every name and value.
func (s *scan) aliasKey() string {
	if s.aliasHash != "" {
		return s.aliasHash
	}
	names := slices.Sorted(maps.Keys(s.aliases))
	h := fnv.New128a()
	for _, name := range names {
		for _, a := range s.aliases[name] {
			fmt.Fprintf(h, "%d:%s=%d:%s;", len(a.name), a.name, len(a.value), a.value)
		}
	}
	s.aliasHash = string(h.Sum(nil))
	return s.aliasHash
}

// aliasDef reads an alias value in this scan's dialect (once per value).
func (s *scan) aliasDef(value string) aliasDef {
	if d, ok := s.aliasDefs[value]; ok {
		return d
	}
	d := s.readAlias(value)
	if s.aliasDefs == nil {
		s.aliasDefs = map[string]aliasDef{}
	}
	s.aliasDefs[value] = d
	return d
}

func (s *scan) readAlias(value string) aliasDef {
	if strings.Trim(value, " \t") == "" {
		return aliasDef{blank: true}
	}
	d := aliasDef{blank: strings.ContainsAny(value[len(value)-1:], " \t")}
	f, err := syntax.NewParser(syntax.Variant(s.lang)).Parse(strings.NewReader(value), "")
	if err != nil || len(f.Stmts) != 1 || len(f.Last) > 0 || len(value) > maxInput {
		return aliasDef{opaque: true}
	}
	st := f.Stmts[0]
	call, ok := st.Cmd.(*syntax.CallExpr)
	if !ok || len(call.Assigns) > 0 || len(call.Args) == 0 || len(st.Redirs) > 0 || len(st.Comments) > 0 ||
		st.Negated || st.Background || st.Coprocess || st.Disown ||
		strings.Trim(value[:call.Pos().Offset()], " \t") != "" || strings.Trim(value[call.End().Offset():], " \t") != "" {
		return aliasDef{opaque: true}
	}
	// The value's words are read against its own text.
	sub := &scan{c: s.c, src: value, depth: s.depth, lang: s.lang}
	for _, w := range call.Args {
		d.toks = append(d.toks, atok{fields: sub.wordFields(w), name: aliasName(w)})
	}
	return d
}

// aliasReadings are the commands call may run once the aliases defined
// before it are expanded, other than the one it runs as written (which
// s.command reads).
func (s *scan) aliasReadings(call *syntax.CallExpr) []*command {
	if len(s.aliases) == 0 || len(call.Args) == 0 {
		return nil
	}
	if r, ok := s.readings[call]; ok {
		return r
	}
	e := &expander{s: s, at: int(call.Pos().Offset()), seen: map[string]bool{}}
	toks := make([]atok, len(call.Args))
	for i, w := range call.Args {
		toks[i] = atok{fields: s.wordFields(w), name: aliasName(w)}
	}
	e.seen[readingKey(s.fields(call.Args))] = true // the reading as written, which s.command reads
	e.walk(nil, toks, nil, nil)
	if e.opaque {
		s.add(reasonAlias)
	}
	if e.tooComplex {
		s.add(reasonTooComplex)
	}
	var out []*command
	for _, fields := range e.readings {
		out = append(out, unwrap(fields))
	}
	if s.readings == nil {
		s.readings = map[*syntax.CallExpr][]*command{}
	}
	s.readings[call] = out
	return out
}

// names are the names call may run as: as written and once its aliases
// are expanded.
func (s *scan) names(call *syntax.CallExpr) []string {
	names := []string{s.command(call).name}
	for _, cmd := range s.aliasReadings(call) {
		names = append(names, cmd.name)
	}
	return names
}

// expander lists the readings of one command's words.
type expander struct {
	s          *scan
	at         int // the command's offset: the definitions before it apply
	readings   [][]field
	seen       map[string]bool
	steps      int
	opaque     bool
	tooComplex bool
}

func readingKey(fields []field) string {
	var b strings.Builder
	for _, f := range fields {
		b.WriteString(f.s)
		if f.lit {
			b.WriteByte(1)
		}
		b.WriteByte(0)
	}
	return b.String()
}

func (e *expander) emit(fields []field) {
	key := readingKey(fields)
	if e.seen[key] {
		return
	}
	e.seen[key] = true
	if len(e.readings) == maxAliasReadings {
		e.tooComplex = true
		return
	}
	e.readings = append(e.readings, fields)
}

// walk reads toks, whose first is in command position, after the fields
// done: as written, and as each alias it may name (that is not being
// expanded: active) expands it. cmdAt lists the tokens that are command
// names when reached as written (the word after a value ending in a
// blank), by index in toks.
func (e *expander) walk(done []field, toks []atok, cmdAt []int, active []string) {
	if e.steps++; e.steps > maxAliasSteps || e.tooComplex {
		e.tooComplex = true
		return
	}
	if len(toks) == 0 {
		e.emit(done)
		return
	}
	t := toks[0]
	e.literal(append(slices.Clip(done), t.fields...), toks[1:], shift(cmdAt, 1))
	if t.name == "" || slices.Contains(active, t.name) {
		return
	}
	for _, a := range e.s.aliases[t.name] {
		if !e.s.shared && a.pos >= e.at {
			continue // defined after this command
		}
		d := e.s.aliasDef(a.value)
		if d.opaque {
			e.opaque = true
			continue
		}
		// The value's words take the name's place; its first is a
		// command name again, with this alias being expanded.
		rest := append(append([]atok(nil), d.toks...), toks[1:]...)
		marks := shift(cmdAt, 1-len(d.toks))
		if d.blank {
			marks = append(marks, len(d.toks))
		}
		if len(d.toks) == 0 {
			// An empty value: the next word is the command.
			e.walk(done, rest, shift(marks, 1), nil)
			continue
		}
		e.walk(done, rest, marks, append(slices.Clip(active), t.name))
	}
}

// literal reads toks as written after done, up to the next token that is
// a command name (listed in cmdAt), which walk reads.
func (e *expander) literal(done []field, toks []atok, cmdAt []int) {
	next := -1
	for _, i := range cmdAt {
		if next < 0 || i < next {
			next = i
		}
	}
	for i, t := range toks {
		if i == next {
			e.walk(done, toks[i:], shift(cmdAt, i), nil)
			return
		}
		done = append(done, t.fields...)
	}
	e.emit(done)
}

// shift moves the indexes of cmdAt n tokens down, dropping those that
// fall before the first.
func shift(cmdAt []int, n int) []int {
	var out []int
	for _, i := range cmdAt {
		if i-n >= 0 && !slices.Contains(out, i-n) {
			out = append(out, i-n)
		}
	}
	return out
}

// renameVars are bash's tables of what a command name runs: an element
// set in BASH_ALIASES is an alias, one in BASH_CMDS a hashed path.
var renameVars = []string{"BASH_ALIASES", "BASH_CMDS"}

// variables checks the assignments that change what later commands do:
// bash's ways to rename a command that alias definitions are not (an
// assignment to BASH_ALIASES or BASH_CMDS, directly, by ${X:=...}, or
// through a declare whose name is only known at run time or a nameref to
// one), and pointing docker at another daemon (DOCKER_HOST=...).
func (s *scan) variables(n syntax.Node) {
	switch n := n.(type) {
	case *syntax.Assign:
		if n.Name != nil && slices.Contains(renameVars, n.Name.Value) {
			s.add(reasonAlias)
		}
		if n.Name != nil && slices.Contains(dockerHostVars, n.Name.Value+"=") {
			s.add(reasonDockerHost)
		}
	case *syntax.ParamExp:
		if n.Param != nil && slices.Contains(renameVars, n.Param.Value) && n.Exp != nil &&
			(n.Exp.Op == syntax.AssignUnset || n.Exp.Op == syntax.AssignUnsetOrNull) {
			s.add(reasonAlias)
		}
	case *syntax.DeclClause:
		nameref := false
		for _, a := range n.Args {
			if a.Naked && a.Value != nil && strings.HasPrefix(s.literalText(a.Value).s, "-") && strings.Contains(s.literalText(a.Value).s, "n") {
				nameref = true
			}
		}
		for _, a := range n.Args {
			switch {
			case a.Naked && a.Value != nil:
				// declare "$v[r]=rm": the name is only known at run
				// time; declare -n x=BASH_ALIASES.
				if f := s.literalText(a.Value); !f.lit || namesRenameVar(f.s) {
					s.add(reasonAlias)
				}
			case nameref && a.Value != nil:
				if f := s.literalText(a.Value); !f.lit || namesRenameVar(f.s) {
					s.add(reasonAlias)
				}
			}
		}
	}
}

// namesRenameVar reports whether a variable name (NAME, NAME[key]) is
// one of renameVars.
func namesRenameVar(name string) bool {
	return slices.ContainsFunc(renameVars, func(v string) bool { return strings.Contains(name, v) })
}

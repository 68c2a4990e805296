package cmdcheck

import (
	"regexp"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

var (
	spaceRe       = regexp.MustCompile(`\s+`)
	sqlDropRe     = regexp.MustCompile(`\bdrop\s+(table|database|schema)\b`)
	sqlTruncateRe = regexp.MustCompile(`\btruncate\s+(table\s+)?[a-z_"` + "`" + `\[]`)
	sqlDeleteRe   = regexp.MustCompile(`\bdelete\s+from\b`)
	sqlWhereRe    = regexp.MustCompile(`\bwhere\b`)
)

// inertCommands only print or search text: SQL in their arguments is data
// (grep -rn "DROP TABLE" migrations/).
var inertCommands = map[string]bool{
	"echo": true, "printf": true, "grep": true, "egrep": true, "fgrep": true, "rg": true,
	"ag": true, "ack": true, "cat": true, "head": true, "tail": true, "less": true,
	"more": true, "wc": true, "sort": true, "uniq": true, "cut": true, "tr": true,
	"awk": true, "sed": true, "jq": true, "man": true, "true": true, "false": true,
	":": true, "test": true, "[": true, "ls": true, "diff": true,
}

// sql looks for destructive SQL in a pipeline that runs a program other
// than a text tool (psql -c 'DROP TABLE t', echo 'DELETE FROM t;' |
// sqlite3 db, psql <<EOF ... EOF): its text and its here-documents.
func (s *scan) sql(root *syntax.Stmt, stages []*syntax.Stmt) {
	inert := true
	for _, st := range stages {
		call, ok := st.Cmd.(*syntax.CallExpr)
		if !ok {
			inert = false // a compound command runs who knows what
			break
		}
		if len(call.Args) > 0 {
			if cmd := s.command(call); cmd.name != "" && (cmd.dynamic || !inertCommands[family(cmd.name)]) {
				inert = false
				break
			}
		}
	}
	if inert {
		return
	}
	var text strings.Builder
	text.WriteString(s.text(root))
	// A here-document's body follows its line, after the end of the
	// pipeline it feeds.
	syntax.Walk(root, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.CmdSubst, *syntax.ProcSubst:
			return false
		case *syntax.Redirect:
			if n.Hdoc != nil && n.Hdoc.End().Offset() > root.End().Offset() {
				text.WriteString("\n" + s.text(n.Hdoc))
			}
		}
		return true
	})
	sqlReasons(s, text.String())
}

func sqlReasons(s *scan, text string) {
	low := strings.ToLower(spaceRe.ReplaceAllString(text, " "))
	if sqlDropRe.MatchString(low) {
		s.add(reasonSQLDrop)
	}
	if sqlTruncateRe.MatchString(low) {
		s.add(reasonSQLTruncate)
	}
	for _, loc := range sqlDeleteRe.FindAllStringIndex(low, -1) {
		stmt := low[loc[1]:]
		if i := strings.IndexByte(stmt, ';'); i >= 0 {
			stmt = stmt[:i]
		}
		if !sqlWhereRe.MatchString(stmt) {
			s.add(reasonSQLDelete)
			break
		}
	}
}

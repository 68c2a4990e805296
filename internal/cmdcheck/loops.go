package cmdcheck

import (
	"mvdan.cc/sh/v3/syntax"
)

// maxLoopItems is the longest list of literal words a for loop may run a
// background job for without being flagged.
const maxLoopItems = 64

// loop flags a loop that starts background jobs without bound: a while or
// until loop (while true; do sleep 1 & done: its condition is only known
// at run time), a C-style for loop, or a for loop over words not all known
// beforehand (a glob, $(...), "$@") or more than maxLoopItems of them,
// whose body runs something with & and no wait. A loop whose body waits
// (a wait statement of its own, not behind && or in a branch), or one over a short literal list (for h in a b c; do ping $h &
// done), is bounded.
func (s *scan) loop(n syntax.Node) {
	var body []*syntax.Stmt
	switch n := n.(type) {
	case *syntax.WhileClause:
		body = n.Do
	case *syntax.ForClause:
		body = n.Do
		if it, ok := n.Loop.(*syntax.WordIter); ok && it.InPos.IsValid() && len(it.Items) <= maxLoopItems {
			bounded := true
			items := 0
			for _, w := range it.Items {
				for _, f := range s.wordFields(w) {
					items++
					bounded = bounded && f.lit
				}
			}
			if bounded && items <= maxLoopItems {
				return
			}
		}
	default:
		return
	}
	background, waits := false, false
	for _, st := range body {
		syntax.Walk(st, func(n syntax.Node) bool {
			switch n := n.(type) {
			case *syntax.FuncDecl:
				return false // defines, does not run
			case *syntax.Stmt:
				background = background || n.Background || n.Coprocess || n.Disown
				if _, ok := n.Cmd.(*syntax.CoprocClause); ok {
					background = true
				}
			}
			return true
		})
		// A wait of the body's own (not one behind && or in a branch).
		if call, ok := st.Cmd.(*syntax.CallExpr); ok && len(call.Args) > 0 && !st.Background && s.command(call).name == "wait" {
			waits = true
		}
	}
	if background && !waits {
		s.add(reasonSpawnLoop)
	}
}

// Package textdist measures how far apart two short strings are, for the
// "did you mean" suggestions of the config file and of read_file. It
// imports only the standard library.
package textdist

// Distance is the optimal string alignment distance between a and b,
// counted in runes: inserting, deleting or substituting a rune, or swapping
// two adjacent runes, each cost 1. It takes time len(a)*len(b); callers
// bound their inputs.
func Distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	// Three rows of the distance table: i-2, i-1 and i.
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}

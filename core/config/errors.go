package config

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
)

// Error is one problem in the configuration, rendered as
// "file:line[:column]: key: message" (or "MICROLET_X: ..." / "--flag: ...").
type Error struct {
	// Position is where the offending value was set; zero when no single
	// source set it (a derived default).
	Position Position
	// Column is set for syntax errors.
	Column int
	// Key is the dotted key concerned; empty for syntax errors and for
	// unknown keys at the top level.
	Key     string
	Message string
}

func (e *Error) Error() string {
	var b strings.Builder
	if pos := e.Position.String(); pos != "" {
		b.WriteString(pos)
		if e.Column > 0 {
			b.WriteString(":" + strconv.Itoa(e.Column))
		}
		b.WriteString(": ")
	}
	if e.Key != "" {
		b.WriteString(e.Key + ": ")
	}
	b.WriteString(e.Message)
	return b.String()
}

// Errors is every problem Load found, one per line.
type Errors []*Error

func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// sortByPosition orders one source's errors as they appear in it.
func (es Errors) sortByPosition() {
	slices.SortStableFunc(es, func(a, b *Error) int {
		return cmp.Or(
			cmp.Compare(a.Position.Line, b.Position.Line),
			cmp.Compare(a.Column, b.Column),
			cmp.Compare(a.Position.File, b.Position.File), // variable or flag names
			cmp.Compare(a.Key, b.Key),
		)
	})
}

// closest returns the candidate nearest to name in edit distance, if it is
// near enough to be a likely typo.
func closest(name string, candidates []string) (string, bool) {
	best, bestDist := "", len(name)/3+2
	for _, c := range candidates {
		if d := editDistance(name, c); d < bestDist {
			best, bestDist = c, d
		}
	}
	return best, best != ""
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

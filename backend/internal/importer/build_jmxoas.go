package importer

// Helpers shared by the jmx and openapi importers (import2 branch). Names here are unprefixed
// because both formats use them; the other importers may use them too.

import (
	"strings"
	"unicode/utf8"
)

// maxPlanName is plan.Validate's bound on a plan's name.
const maxPlanName = 200

// clipText shortens s to at most n bytes on a rune boundary, marking the cut with "…".
func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// planName is a plan name from a title, or dflt when the title is blank.
func planName(title, dflt string) string {
	title = strings.Join(strings.Fields(title), " ")
	if title == "" {
		return dflt
	}
	return clipText(title, maxPlanName)
}

// notes collects the Skipped list of one import, merging repeats of the same element and reason.
type notes struct {
	list []Skipped
	seen map[Skipped]bool
}

// add records that element was not imported (or imported only in part) and why.
func (n *notes) add(element, reason string) {
	s := Skipped{Element: clipText(element, 300), Reason: reason}
	if n.seen == nil {
		n.seen = map[Skipped]bool{}
	}
	if n.seen[s] {
		return
	}
	n.seen[s] = true
	n.list = append(n.list, s)
}

// result wraps a plan built from the named format and its notes.
func (n *notes) result(format string, p map[string]any) Result {
	l := n.list
	if l == nil {
		l = []Skipped{}
	}
	return Result{Plan: p, Skipped: l, Format: format}
}

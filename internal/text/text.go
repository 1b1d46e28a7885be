// Package text shapes strings for the API: conditions, events and status fields have size limits,
// and a message cut in the middle of a rune is no longer valid UTF-8.
package text

import "unicode/utf8"

// Cut shortens s to at most n bytes, on a rune boundary, ending it with mark when it cuts.
func Cut(s string, n int, mark string) string {
	if len(s) <= n {
		return s
	}
	cut := max(n-len(mark), 0)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}

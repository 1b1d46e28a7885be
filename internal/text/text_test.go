package text

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCut(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"a longer message", 10, "a longe..."},
		// "≤" is three bytes: the cut moves back to its start rather than split it.
		{"abcdef≤ghij", 11, "abcdef..."},
		{strings.Repeat("é", 10), 8, "éé..."},
	} {
		got := Cut(tc.in, tc.n, "...")
		if got != tc.want || len(got) > tc.n || !utf8.ValidString(got) {
			t.Errorf("Cut(%q, %d) = %q, want %q within %d bytes and valid UTF-8", tc.in, tc.n, got, tc.want, tc.n)
		}
	}
}

// Package gitedit changes the image of a workload in the files of a Git repository: the `images:`
// entry of a kustomization.yaml, or the values on lines marked for a config (plain YAML, Helm
// values). It also writes the Renovate preset that keeps failed versions out of Renovate's
// proposals. Files are written by people: an edit changes the value it sets and not one byte
// besides (comments, quoting, indentation and blank lines stay as they were).
package gitedit

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"

	yaml "go.yaml.in/yaml/v3"
)

// scalarAt is the extent of a YAML scalar token written at src[start:] (quotes included) and the
// quote it is written with (0 for a plain scalar). A plain scalar ends at the end of its line or at
// a comment; a flow scalar also at ',', ']' or '}'. Scalars over several lines are refused: an edit
// there could not keep the rest of the file as it was.
func scalarAt(src []byte, start int, flow bool) (end int, quote byte, err error) {
	if start >= len(src) {
		return 0, 0, fmt.Errorf("no value at offset %d", start)
	}
	switch q := src[start]; q {
	case '"', '\'':
		for i := start + 1; i < len(src); i++ {
			switch {
			case src[i] == '\n':
				return 0, 0, fmt.Errorf("a quoted value over several lines at offset %d", start)
			case q == '"' && src[i] == '\\':
				i++
			case src[i] == q && q == '\'' && i+1 < len(src) && src[i+1] == '\'':
				i++ // '' is a quote inside a single-quoted scalar
			case src[i] == q:
				return i + 1, q, nil
			}
		}
		return 0, 0, fmt.Errorf("an unterminated quoted value at offset %d", start)
	case '|', '>':
		return 0, 0, fmt.Errorf("a block scalar at offset %d", start)
	}
	end = start
	for end < len(src) && src[end] != '\n' && src[end] != '\r' {
		if src[end] == '#' && end > start && (src[end-1] == ' ' || src[end-1] == '\t') {
			break
		}
		if flow && (src[end] == ',' || src[end] == ']' || src[end] == '}') {
			break
		}
		end++
	}
	for end > start && (src[end-1] == ' ' || src[end-1] == '\t') {
		end--
	}
	return end, 0, nil
}

// render writes value in the style of the token it replaces. A plain value that YAML would read as
// something other than that string (a version "1.10" is the number 1.1; "true", "null") is
// double-quoted, so the file says what was meant.
func render(value string, quote byte) string {
	switch {
	case quote == '\'':
		return "'" + strings.ReplaceAll(value, "'", "''") + "'"
	case quote == '"' || !plainSafe(value):
		return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(value) + `"`
	}
	return value
}

// plainSafe: value written plain reads back as the same string.
func plainSafe(value string) bool {
	if value == "" || strings.ContainsAny(value, "#\n\t{}[],&*!|>'\"%@`") || strings.Contains(value, ": ") ||
		strings.HasPrefix(value, "- ") || strings.HasPrefix(value, "? ") || strings.HasSuffix(value, ":") {
		return false
	}
	var read any
	if err := yaml.Unmarshal([]byte(value), &read); err != nil {
		return false
	}
	s, ok := read.(string)
	return ok && s == value
}

// replaceScalar writes value over the scalar token that starts at src[start:].
func replaceScalar(src []byte, start int, flow bool, value string) ([]byte, error) {
	end, quote, err := scalarAt(src, start, flow)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(src)+len(value))
	out = append(out, src[:start]...)
	out = append(out, render(value, quote)...)
	return append(out, src[end:]...), nil
}

// offset is the byte offset of a node's first character: yaml counts lines from 1 and columns from 1
// in characters, not bytes.
func offset(src []byte, n *yaml.Node) (int, error) {
	off := 0
	for line := 1; line < n.Line; line++ {
		i := bytes.IndexByte(src[off:], '\n')
		if i < 0 {
			return 0, fmt.Errorf("line %d is past the end of the file", n.Line)
		}
		off += i + 1
	}
	for col := 1; col < n.Column; col++ {
		if off >= len(src) || src[off] == '\n' {
			return 0, fmt.Errorf("column %d is past the end of line %d", n.Column, n.Line)
		}
		_, size := utf8.DecodeRune(src[off:])
		off += size
	}
	return off, nil
}

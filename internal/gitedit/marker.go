package gitedit

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// A line marked for a config ends in a comment naming it, in the style of Flux's image setters:
//
//	image: ghcr.io/acme/web:1.2.0 # {"$rollgate": "shop:web"}
//	tag: 1.2.0                    # {"$rollgate": "shop:web:tag"}
//
// The first sets the whole reference (repository:version), the second the tag alone (Helm values
// that keep repository and tag apart). The value set is the scalar just before the comment: a
// field's value or a list item.
var markerComment = regexp.MustCompile(`#\s*\{\s*"\$rollgate"\s*:\s*"([^"]*)"\s*\}`)

// Marker names the config whose lines are set: "<namespace>:<name>".
func Marker(namespace, name string) string { return namespace + ":" + name }

// SetMarked sets every line marked for marker (see markerComment): the whole image reference
// image:tag, or the tag alone. It returns how many lines are marked for it; a file with none is
// returned as it is. A file that was YAML must still be: an edit that would break it is refused.
func SetMarked(src []byte, marker, image, tag string) ([]byte, int, error) {
	out := make([]byte, 0, len(src)+32)
	marked := 0
	for n, rest := 1, src; len(rest) > 0; n++ {
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line = rest[:i+1]
		}
		rest = rest[len(line):]
		m := markerComment.FindSubmatchIndex(line)
		if m == nil {
			out = append(out, line...)
			continue
		}
		var value string
		switch string(line[m[2]:m[3]]) {
		case marker:
			value = image + ":" + tag
		case marker + ":tag":
			value = tag
		default:
			out = append(out, line...) // another config's line
			continue
		}
		start, err := valueBefore(line, m[0])
		if err != nil {
			return nil, 0, fmt.Errorf("line %d: %w", n, err)
		}
		edited, err := replaceScalar(line, start, false, value)
		if err != nil {
			return nil, 0, fmt.Errorf("line %d: %w", n, err)
		}
		out = append(out, edited...)
		marked++
	}
	if marked == 0 {
		return src, 0, nil
	}
	var before, after yaml.Node
	if yaml.Unmarshal(src, &before) == nil {
		if err := yaml.Unmarshal(out, &after); err != nil {
			return nil, 0, fmt.Errorf("the edit would leave a file that is not YAML: %w", err)
		}
	}
	return out, marked, nil
}

// valueBefore is where the scalar ends that stands just before a comment at offset comment: after
// "key:" or "- ".
func valueBefore(line []byte, comment int) (int, error) {
	text := strings.TrimRight(string(line[:comment]), " \t")
	if text == "" {
		return 0, fmt.Errorf("the marker comment follows no value")
	}
	var start int
	if q := text[len(text)-1]; q == '"' || q == '\'' {
		start = strings.LastIndexByte(text[:len(text)-1], q)
		for q == '\'' && start > 0 && text[start-1] == '\'' { // '' inside a single-quoted scalar
			start = strings.LastIndexByte(text[:start-1], q)
		}
		if start < 0 {
			return 0, fmt.Errorf("an unterminated quoted value before the marker comment")
		}
	} else {
		start = strings.LastIndexAny(text, " \t") + 1
	}
	before := text[:start]
	trimmed := strings.TrimRight(before, " \t")
	if len(trimmed) == len(before) || !strings.HasSuffix(trimmed, ":") && !strings.HasSuffix(trimmed, "-") {
		return 0, fmt.Errorf("the marker comment does not follow a field's value or a list item")
	}
	return start, nil
}

package gitedit

import (
	"bytes"
	"fmt"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/rollgate/rollgate/internal/image"
)

// SetKustomizeImage sets the tag of image in a kustomization's `images:` list, as
// `kustomize edit set image` would but without rewriting the file: the entry whose newName is image,
// or else whose name is image and that has no newName (names compare as repositories: "nginx" is
// "docker.io/library/nginx"). An entry without newTag gets one under its last field; a
// kustomization without an entry for image gets one at the end of its list, or a list at the end
// of the file. An entry that pins a digest is refused: its digest, not its tag, says what runs.
func SetKustomizeImage(src []byte, image, tag string) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return nil, fmt.Errorf("not YAML: %w", err)
	}
	newEntry := []string{"- name: " + render(image, 0), "  newTag: " + render(tag, 0)}
	if len(doc.Content) == 0 {
		return appendLines(src, 0, append([]string{"images:"}, newEntry...)...), nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("not a kustomization: the document is not a mapping")
	}
	key, images := field(root, "images")
	switch {
	case images == nil:
		return appendLines(src, len(src), append([]string{"images:"}, newEntry...)...), nil
	case images.Kind == yaml.ScalarNode && images.Tag == "!!null":
		at, err := lineEnd(src, key)
		if err != nil {
			return nil, err
		}
		return appendLines(src, at, newEntry...), nil
	case images.Kind != yaml.SequenceNode || images.Style&yaml.FlowStyle != 0:
		return nil, fmt.Errorf("images is not a block list (- name: ...) at line %d", images.Line)
	}

	for _, entry := range images.Content {
		if entry.Kind == yaml.MappingNode && sameRepository(entryRepository(entry), image) {
			return setEntryTag(src, entry, image, tag)
		}
	}
	return appendEntry(src, images, image, tag)
}

// setEntryTag sets the newTag of the images entry of image.
func setEntryTag(src []byte, entry *yaml.Node, image, tag string) ([]byte, error) {
	if _, d := field(entry, "digest"); d != nil {
		return nil, fmt.Errorf("the images entry for %s at line %d pins a digest", image, entry.Line)
	}
	flow := entry.Style&yaml.FlowStyle != 0
	if _, t := field(entry, "newTag"); t != nil {
		if t.Value == tag {
			return src, nil
		}
		at, err := offset(src, t)
		if err != nil {
			return nil, err
		}
		return replaceScalar(src, at, flow, tag)
	}
	if flow {
		return nil, fmt.Errorf("the images entry for %s at line %d is written {...} and has no newTag to set", image, entry.Line)
	}
	at, err := lineEnd(src, entry.Content[len(entry.Content)-1])
	if err != nil {
		return nil, err
	}
	return appendLines(src, at, strings.Repeat(" ", entry.Column-1)+"newTag: "+render(tag, 0)), nil
}

// appendEntry adds an entry for image at tag after the last of images.
func appendEntry(src []byte, images *yaml.Node, image, tag string) ([]byte, error) {
	last := images.Content[len(images.Content)-1]
	if last.Kind != yaml.MappingNode || last.Style&yaml.FlowStyle != 0 || len(last.Content) == 0 {
		return nil, fmt.Errorf("the last images entry at line %d is not a block mapping", last.Line)
	}
	// The new entry is indented as the last one: its dash where that dash is, its fields where
	// that entry's fields are.
	first, err := offset(src, last)
	if err != nil {
		return nil, err
	}
	lineStart := bytes.LastIndexByte(src[:first], '\n') + 1
	dash := bytes.LastIndexByte(src[lineStart:first], '-')
	if dash < 0 {
		return nil, fmt.Errorf("no dash before the images entry at line %d", last.Line)
	}
	indent, gap := strings.Repeat(" ", dash), strings.Repeat(" ", first-lineStart-dash)
	at, err := lineEnd(src, last.Content[len(last.Content)-1])
	if err != nil {
		return nil, err
	}
	return appendLines(src, at, indent+"-"+gap[1:]+"name: "+render(image, 0), indent+gap+"newTag: "+render(tag, 0)), nil
}

// field is the key and value nodes of a mapping's field, nil when it has none.
func field(mapping *yaml.Node, key string) (*yaml.Node, *yaml.Node) {
	for i := 0; i+1 < len(mapping.Content); i += 2 {
		if mapping.Content[i].Value == key {
			return mapping.Content[i], mapping.Content[i+1]
		}
	}
	return nil, nil
}

// entryRepository is the repository an images entry makes its image: its newName, or its name.
func entryRepository(entry *yaml.Node) string {
	if _, n := field(entry, "newName"); n != nil && n.Value != "" {
		return n.Value
	}
	if _, n := field(entry, "name"); n != nil {
		return n.Value
	}
	return ""
}

// sameRepository: the names are one repository, or, when one is no repository name, the same.
func sameRepository(a, b string) bool { return a == b || image.SameRepositoryName(a, b) }

// lineEnd is the offset just past the line a single-line node ends on (its newline included).
func lineEnd(src []byte, n *yaml.Node) (int, error) {
	if n.Kind != yaml.ScalarNode || n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
		return 0, fmt.Errorf("the value at line %d spans several lines", n.Line)
	}
	at, err := offset(src, n)
	if err != nil {
		return 0, err
	}
	if i := bytes.IndexByte(src[at:], '\n'); i >= 0 {
		return at + i + 1, nil
	}
	return len(src), nil
}

// appendLines inserts whole lines at offset at, which is the start of a line or the end of the file
// (a file without a final newline gets one first).
func appendLines(src []byte, at int, lines ...string) []byte {
	out := make([]byte, 0, len(src)+64)
	out = append(out, src[:at]...)
	if at > 0 && out[at-1] != '\n' {
		out = append(out, '\n')
	}
	for _, l := range lines {
		out = append(out, l...)
		out = append(out, '\n')
	}
	return append(out, src[at:]...)
}

package engine

import (
	"testing"

	"github.com/rollgate/rollgate/internal/image"
)

// FuzzParseVersionList: a ConfigMap value is either refused or read as image tags only.
func FuzzParseVersionList(f *testing.F) {
	for _, v := range []string{"1.2.0", " 1.2.0, 1.3.0 ,", "latest", "", " , ", "{{ .Values.tag }}", "1.2.0\n1.3.0", "1.4.0+build.5"} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, value string) {
		tags, err := parseVersionList(value)
		if err != nil {
			return
		}
		if len(tags) == 0 {
			t.Errorf("%q read as no tags without an error", value)
		}
		for _, tag := range tags {
			if !image.IsTag(tag) {
				t.Errorf("%q read %q, which is not a tag", value, tag)
			}
		}
	})
}

package image

import (
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
)

// FuzzReferences: the reference helpers never panic, the tag they read from a reference is a valid
// tag, and an image runs a target only of its own repository.
func FuzzReferences(f *testing.F) {
	for _, s := range []string{"ghcr.io/acme/web:1.4.0", "ghcr.io/acme/web@" + digest, "ghcr.io/acme/web:1.4.0@" + digest,
		"nginx", "127.0.0.1:5000/demo/app:v2.0.0", "not a reference", ""} {
		f.Add(s, "ghcr.io/acme/web:1.4.0")
	}
	f.Fuzz(func(t *testing.T, image, target string) {
		_ = Version(image)
		ref, err := name.ParseReference(image, name.WeakValidation)
		if err != nil {
			return
		}
		if tag := Tag(image); tag != "" && !IsTag(tag) {
			t.Errorf("Tag(%q) = %q, which is not a tag", image, tag)
		}
		if image != target && Renders(image, target) {
			want, err := name.ParseReference(target, name.WeakValidation)
			if err != nil || want.Context().Name() != ref.Context().Name() {
				t.Errorf("%q runs %q of another repository", image, target)
			}
		}
	})
}

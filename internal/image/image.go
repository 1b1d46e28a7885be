// Package image reads container image references: which repository an image belongs to, and which
// version (tag, or digest) it names. It wraps go-containerregistry's reference parser.
package image

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
)

// parse reads an image reference. go-containerregistry accepts a tag that starts with "." or "-"
// ("web:.x"), which no registry stores; such a reference is refused here.
func parse(image string) (name.Reference, string, error) {
	ref, err := name.ParseReference(image, name.WeakValidation)
	if err != nil {
		return nil, "", err
	}
	base := image
	if dg, ok := ref.(name.Digest); ok {
		base = strings.TrimSuffix(image, "@"+dg.DigestStr())
	}
	tag := ""
	if i := strings.LastIndex(base, ":"); i > strings.LastIndex(base, "/") {
		tag = base[i+1:]
	}
	if tag != "" && !IsTag(tag) {
		return nil, "", fmt.Errorf("%q is not an image tag", tag)
	}
	return ref, tag, nil
}

// SameRepository reports whether image is a tag or digest of repository. Names are normalised,
// so "nginx:1.27" belongs to "docker.io/library/nginx".
func SameRepository(image, repository string) bool {
	ref, _, err := parse(image)
	if err != nil {
		return false
	}
	repo, err := name.NewRepository(repository, name.WeakValidation)
	if err != nil {
		return false
	}
	return ref.Context().Name() == repo.Name()
}

// SameRepositoryName reports whether two repository names (no tag) name one repository.
func SameRepositoryName(a, b string) bool {
	ra, err := name.NewRepository(a, name.WeakValidation)
	if err != nil {
		return false
	}
	rb, err := name.NewRepository(b, name.WeakValidation)
	return err == nil && ra.Name() == rb.Name()
}

// Tag returns the tag written in an image reference ("1.4.0" for web:1.4.0 and for
// web:1.4.0@sha256:...), or "" when it has none. The implicit "latest" of a bare name is not a tag.
func Tag(image string) string {
	_, tag, _ := parse(image)
	return tag
}

// Version is what rollgate records as the version of an image: its tag, or its digest when it has
// no tag.
func Version(image string) string {
	if t := Tag(image); t != "" {
		return t
	}
	if i := strings.LastIndex(image, "@"); i >= 0 {
		return image[i+1:]
	}
	return ""
}

// Digest returns the digest an image reference names (sha256:… for web:1.4.0@sha256:…), or "".
func Digest(image string) string {
	ref, _, err := parse(image)
	if err != nil {
		return ""
	}
	return digestOf(ref)
}

// Renders reports whether a workload whose container runs image runs target. Images are compared
// by repository and tag, and by digest when target names one: an admission webhook that pins
// images by digest (Kyverno verifyImages, sigstore policy-controller) turns web:1.1.0 into
// web:1.1.0@sha256:…, which still runs web:1.1.0. A target that names a digest is run only by an
// image of that digest (with the same tag, when both name one).
func Renders(image, target string) bool {
	if image == target {
		return true
	}
	run, runTag, err := parse(image)
	if err != nil {
		return false
	}
	want, wantTag, err := parse(target)
	if err != nil || run.Context().Name() != want.Context().Name() {
		return false
	}
	if wantDigest := digestOf(want); wantDigest != "" {
		return digestOf(run) == wantDigest && (runTag == "" || wantTag == "" || runTag == wantTag)
	}
	return runTag == wantTag
}

func digestOf(ref name.Reference) string {
	if d, ok := ref.(name.Digest); ok {
		return d.DigestStr()
	}
	return ""
}

// tagSyntax is the syntax of an image tag (the OCI distribution spec's): a semver version with
// build metadata such as 1.4.0+build.5 is valid semver but no tag, since a tag has no "+".
var tagSyntax = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)

// IsTag reports whether s can be an image tag.
func IsTag(s string) bool { return tagSyntax.MatchString(s) }

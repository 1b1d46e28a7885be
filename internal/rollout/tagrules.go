package rollout

import (
	"errors"
	"fmt"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/image"
	"github.com/rollgate/rollgate/internal/version"
)

// defaultConstraint is spec.versionConstraint's default, which the API server writes into every
// config: beside a tag policy it means no constraint.
const defaultConstraint = ">=0.0.0"

// PolicyOf is how a config reads its tags as versions: by spec.tagPolicy and spec.filterTags, or
// as semver within spec.versionConstraint. Its error names the field at fault.
func PolicyOf(spec v1alpha1.RollingUpgradeConfigSpec) (*version.Policy, error) {
	r := version.Rules{Constraint: spec.VersionConstraint, Follow: spec.FollowTag}
	if r.Follow != "" && r.Constraint == defaultConstraint {
		r.Constraint = ""
	}
	if tp := spec.TagPolicy; tp != nil {
		by, descending := tp.Ordered()
		r.Order, r.Descending = version.Order(by), descending
		if r.Constraint == defaultConstraint {
			r.Constraint = ""
		}
	}
	if f := spec.FilterTags; f != nil {
		r.Pattern, r.Extract = f.Pattern, f.Extract
	}
	p, err := version.Parse(r)
	var re *version.RuleError
	if errors.As(err, &re) {
		field := map[string]string{"constraint": "spec.versionConstraint", "order": "spec.tagPolicy",
			"pattern": "spec.filterTags.pattern", "extract": "spec.filterTags.extract", "follow": "spec.followTag"}[re.Rule]
		return nil, fmt.Errorf("%s: %w", field, re.Err)
	}
	return p, err
}

// semverPolicy reads semver tags within no constraint: how a decision reads tags while its config's
// own rules cannot be read (its health check in flight is judged, nothing new starts).
var semverPolicy, _ = version.NewPolicy("")

// versionOf is the version of img by the config's rules: its tag if they read it (under
// spec.followTag, its tag and digest), else "" (a digest, or a tag such as latest).
func (d *Decision) versionOf(img string) string {
	v := image.Tag(img)
	if d.follow != "" {
		v = imageVersion(d.follow, img)
	}
	if v != "" && d.policy.Reads(v) {
		return v
	}
	return ""
}

// ImageVersion is what a config records as the version of img, whether its rules read it or
// not: image.Version (its tag, else its digest), or under spec.followTag its tag and digest,
// tag@sha256:…, when it names both. The failed list, the history and every request name
// versions so.
func ImageVersion(spec v1alpha1.RollingUpgradeConfigSpec, img string) string {
	return imageVersion(spec.FollowTag, img)
}

func imageVersion(follow, img string) string {
	if follow != "" {
		if tag, digest := image.Tag(img), image.Digest(img); tag != "" && digest != "" {
			return tag + "@" + digest
		}
	}
	return image.Version(img)
}

// followedNote says how versions of a followed tag are named, for a message about a name that
// is none.
func followedNote(follow string) string {
	if follow == "" {
		return ""
	}
	return ", nor " + follow + "@sha256:<digest>"
}

// nameOf is what the decision records as the version of img (ImageVersion).
func (d *Decision) nameOf(img string) string { return imageVersion(d.follow, img) }

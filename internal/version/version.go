// Package version chooses the version a workload moves to: the newest candidate tag that the
// config's rules read (a semver version within its constraint, or a tag ordered by a number or by
// its text), that is strictly newer than the current version and has not failed before. It knows
// nothing of Kubernetes.
package version

import (
	"github.com/Masterminds/semver/v3"
)

// Why a candidate was not chosen.
const (
	SkipNotSemver   = "NotSemver"   // a tag such as latest, nightly or sha-abc1234
	SkipFiltered    = "Filtered"    // the tag does not match the rules' pattern
	SkipNotANumber  = "NotANumber"  // numerical rules: the tag (or what is extracted of it) is no plain decimal
	SkipNotFollowed = "NotFollowed" // a followed tag: the version is no tag@sha256:… of that tag
	SkipConstraint  = "Constraint"  // outside the version constraint
	SkipNotNewer    = "NotNewer"    // not strictly greater than the current version
	SkipFailed      = "Failed"      // on the failed list (exact tag string)
	SkipDuplicate   = "Duplicate"   // the same tag string came from two sources
	SkipHeld        = "Held"        // eligible, but the caller holds it (ChooseHeld), e.g. too young
)

// Skip records one candidate that was not chosen and why.
type Skip struct {
	Tag    string
	Reason string
}

// Choice is the outcome of Choose.
type Choice struct {
	// Tag is the chosen candidate as written by its source, or "" when none is eligible.
	Tag string
	// Skipped lists, in input order, the candidates that were not eligible and why. Eligible
	// candidates lower than Tag are not listed.
	Skipped []Skip
	// Held is the highest candidate the caller held (ChooseHeld) that would have been chosen
	// over Tag, or "".
	Held string
}

// IsSemver reports whether a tag reads as a semantic version (a leading "v" and a missing minor
// or patch part are accepted, as Masterminds/semver does).
func IsSemver(tag string) bool {
	_, err := semver.NewVersion(tag)
	return err == nil
}

// NewMajor reports whether tag is of a higher major version than current. A version that is not
// semver counts as a new major: what cannot be compared is no minor step.
func NewMajor(current, tag string) bool {
	c, err := semver.NewVersion(current)
	if err != nil {
		return true
	}
	t, err := semver.NewVersion(tag)
	return err != nil || t.Major() > c.Major()
}

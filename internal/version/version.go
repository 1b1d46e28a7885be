// Package version chooses the version a workload moves to: the highest candidate tag that
// satisfies the semver constraint, is strictly newer than the current version and has not failed
// before. It knows nothing of Kubernetes.
package version

import (
	"fmt"
	"slices"

	"github.com/Masterminds/semver/v3"
)

// Why a candidate was not chosen.
const (
	SkipNotSemver  = "NotSemver"  // a tag such as latest, nightly or sha-abc1234
	SkipConstraint = "Constraint" // outside the version constraint
	SkipNotNewer   = "NotNewer"   // not strictly greater than the current version
	SkipFailed     = "Failed"     // on the failed list (exact tag string)
	SkipDuplicate  = "Duplicate"  // the same tag string came from two sources
	SkipHeld       = "Held"       // eligible, but the caller holds it (ChooseHeld), e.g. too young
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

// Policy holds a parsed constraint; build it once per reconcile with NewPolicy.
type Policy struct {
	constraint *semver.Constraints
}

// NewPolicy parses a Masterminds semver constraint such as ">=1.0.0, <2.0.0". An empty constraint
// accepts every version without a prerelease part.
func NewPolicy(constraint string) (*Policy, error) {
	if constraint == "" {
		constraint = ">=0.0.0"
	}
	c, err := semver.NewConstraint(constraint)
	if err != nil {
		return nil, fmt.Errorf("invalid version constraint %q: %w", constraint, err)
	}
	return &Policy{constraint: c}, nil
}

// Choose picks from candidates. current is the version running now; when it is "" (or not
// semver) nothing can be compared and any version the constraint allows counts as newer, so a
// caller that must not downgrade checks it first. failed holds exact tag strings: "1.2.0" does not
// exclude "v1.2.0".
func (p *Policy) Choose(candidates []string, current string, failed []string) Choice {
	return p.ChooseHeld(candidates, current, failed, nil)
}

// ChooseHeld is Choose, with hold asked of each candidate that is eligible otherwise (and of no
// other): a candidate it holds is skipped (SkipHeld), and the highest of them above the choice is
// Choice.Held. A nil hold holds nothing.
func (p *Policy) ChooseHeld(candidates []string, current string, failed []string, hold func(tag string) bool) Choice {
	cur, _ := semver.NewVersion(current)

	var choice Choice
	var best, held *semver.Version
	seen := map[string]bool{}
	for _, tag := range candidates {
		if seen[tag] {
			choice.Skipped = append(choice.Skipped, Skip{tag, SkipDuplicate})
			continue
		}
		seen[tag] = true
		v, err := semver.NewVersion(tag)
		switch {
		case err != nil:
			choice.Skipped = append(choice.Skipped, Skip{tag, SkipNotSemver})
		case !p.constraint.Check(v):
			choice.Skipped = append(choice.Skipped, Skip{tag, SkipConstraint})
		case cur != nil && !v.GreaterThan(cur):
			choice.Skipped = append(choice.Skipped, Skip{tag, SkipNotNewer})
		case slices.Contains(failed, tag):
			choice.Skipped = append(choice.Skipped, Skip{tag, SkipFailed})
		case hold != nil && hold(tag):
			choice.Skipped = append(choice.Skipped, Skip{tag, SkipHeld})
			if held == nil || v.GreaterThan(held) {
				held, choice.Held = v, tag
			}
		default:
			// Of two spellings of one version the first one seen wins, so the result does not
			// depend on anything but the input order.
			if best == nil || v.GreaterThan(best) {
				best, choice.Tag = v, tag
			}
		}
	}
	if held != nil && best != nil && !held.GreaterThan(best) {
		choice.Held = ""
	}
	return choice
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

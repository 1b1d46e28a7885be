package version

import (
	"cmp"
	"fmt"
	"regexp"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"

	"github.com/Masterminds/semver/v3"
)

// Order is how a policy orders the tags it reads.
type Order string

const (
	// Semver: tags are semantic versions, within a constraint (the default).
	Semver Order = ""
	// Numerical: tags are plain decimal numbers (a build number, a Unix time), compared exactly.
	Numerical Order = "numerical"
	// Alphabetical: tags are ordered by their text, byte by byte (dates with fixed-width parts).
	Alphabetical Order = "alphabetical"
	// followed: the versions are the digests of one tag (Rules.Follow), which have no order.
	followedTag Order = "followed"
)

// Rules say how a config reads tags as versions.
type Rules struct {
	// Constraint is the semver constraint (Semver order only); empty accepts every version
	// without a prerelease part.
	Constraint string
	Order      Order
	// Descending: the lowest key is the newest (Numerical and Alphabetical only).
	Descending bool
	// Pattern, if set, is an RE2 expression a tag must match; Extract, if set, is what the tag is
	// ordered by, in the expression's template syntax ($name, ${1}).
	Pattern, Extract string
	// Follow, if set, is a tag whose digests are the versions, each named tag@sha256:…: no order,
	// constraint or pattern applies to them.
	Follow string
}

// Limits of a pattern: it runs against every tag of a registry on every look.
const (
	MaxPatternLength       = 256
	maxPatternInstructions = 2000
)

// RuleError is a rule that cannot order tags; Rule names it: constraint, order, pattern, extract
// or follow.
type RuleError struct {
	Rule string
	Err  error
}

func (e *RuleError) Error() string { return e.Rule + ": " + e.Err.Error() }
func (e *RuleError) Unwrap() error { return e.Err }

func ruleError(rule, format string, args ...any) error {
	return &RuleError{Rule: rule, Err: fmt.Errorf(format, args...)}
}

// Policy reads, orders and chooses tags by its rules; build it once per decision with NewPolicy
// or Parse.
type Policy struct {
	order      Order
	descending bool
	constraint *semver.Constraints
	pattern    *regexp.Regexp
	extract    string
	follow     string
}

// NewPolicy is the semver policy of a constraint such as ">=1.0.0, <2.0.0".
func NewPolicy(constraint string) (*Policy, error) {
	return Parse(Rules{Constraint: constraint})
}

// Parse checks rules and makes their policy. Its errors name the part of the rules at fault.
func Parse(r Rules) (*Policy, error) {
	if r.Follow != "" {
		return parseFollow(r)
	}
	p := &Policy{order: r.Order, descending: r.Descending, extract: r.Extract}
	switch r.Order {
	case Semver:
		if r.Descending {
			return nil, ruleError("order", "semver versions are newest when highest; an order applies to numerical and alphabetical tags")
		}
		constraint := r.Constraint
		if constraint == "" {
			constraint = ">=0.0.0"
		}
		c, err := semver.NewConstraint(constraint)
		if err != nil {
			return nil, ruleError("constraint", "invalid version constraint %q: %w", r.Constraint, err)
		}
		p.constraint = c
	case Numerical, Alphabetical:
		if r.Constraint != "" {
			return nil, ruleError("constraint", "a version constraint applies to semver tags, not to %s ones", r.Order)
		}
	default:
		return nil, ruleError("order", "unknown tag order %q", r.Order)
	}
	if r.Pattern == "" {
		if r.Order == Alphabetical {
			// Every tag has a text: latest, main and stable would all read as versions.
			return nil, ruleError("pattern", "alphabetical order needs a pattern that matches only the versions")
		}
		if r.Extract != "" {
			return nil, ruleError("extract", "needs a pattern to extract from")
		}
		return p, nil
	}
	pattern, err := compilePattern(r.Pattern)
	if err != nil {
		return nil, &RuleError{Rule: "pattern", Err: err}
	}
	if err := checkExtract(pattern, r.Extract); err != nil {
		return nil, &RuleError{Rule: "extract", Err: err}
	}
	p.pattern = pattern
	return p, nil
}

// tagSyntax is the syntax of an image tag (the OCI distribution spec's).
var tagSyntax = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)

// parseFollow is the policy of a followed tag, which takes no other rule.
func parseFollow(r Rules) (*Policy, error) {
	switch {
	case !tagSyntax.MatchString(r.Follow):
		return nil, ruleError("follow", "%q is not an image tag", r.Follow)
	case r.Order != Semver || r.Descending:
		return nil, ruleError("order", "a followed tag is not ordered: its versions are the digests it names")
	case r.Constraint != "":
		return nil, ruleError("constraint", "a version constraint applies to semver tags, not to a followed tag")
	case r.Pattern != "" || r.Extract != "":
		return nil, ruleError("pattern", "a followed tag is not filtered: its versions are the digests it names")
	}
	return &Policy{order: followedTag, follow: r.Follow}, nil
}

// sha256Digest is a digest as registries name manifests.
var sha256Digest = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// compilePattern compiles an RE2 expression within the size limits.
func compilePattern(expr string) (*regexp.Regexp, error) {
	if len(expr) > MaxPatternLength {
		return nil, fmt.Errorf("%d characters, more than %d", len(expr), MaxPatternLength)
	}
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return nil, err
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return nil, err
	}
	if n := len(prog.Inst); n > maxPatternInstructions {
		return nil, fmt.Errorf("too complex to run against every tag (%d instructions, at most %d)", n, maxPatternInstructions)
	}
	return regexp.Compile(expr)
}

// templateGroup is a group an extract template names: $name, ${name}, $1 or ${1}.
var templateGroup = regexp.MustCompile(`\$(?:\{(\w+)\}|(\w+))`)

// checkExtract refuses a template naming a group the pattern lacks: it would extract nothing,
// and every tag would fall out.
func checkExtract(pattern *regexp.Regexp, extract string) error {
	names := pattern.SubexpNames()
	for _, m := range templateGroup.FindAllStringSubmatch(strings.ReplaceAll(extract, "$$", ""), -1) {
		name := m[1] + m[2]
		if i, err := strconv.Atoi(name); err == nil {
			if i > pattern.NumSubexp() {
				return fmt.Errorf("$%s: the pattern has %d groups", name, pattern.NumSubexp())
			}
			continue
		}
		if pattern.SubexpIndex(name) < 0 {
			return fmt.Errorf("$%s: the pattern has no group of that name (it has %s)", name, groupNames(names))
		}
	}
	return nil
}

func groupNames(names []string) string {
	var out []string
	for _, n := range names {
		if n != "" {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

// Semver reports whether the policy reads tags as semver versions.
func (p *Policy) Semver() bool { return p.order == Semver }

// key is what a tag is ordered by.
type key struct {
	sv   *semver.Version
	num  decimal
	text string
}

// decimal is a plain decimal number, compared exactly, of any length: its integer part without
// leading zeros and its fraction without trailing zeros, so that equal numbers have equal parts.
type decimal struct{ whole, fraction string }

func parseDecimal(s string) decimal {
	whole, fraction, _ := strings.Cut(s, ".")
	return decimal{whole: strings.TrimLeft(whole, "0"), fraction: strings.TrimRight(fraction, "0")}
}

// cmp orders two decimals: the longer integer part is the larger, then digit by digit.
func (a decimal) cmp(b decimal) int {
	if c := cmp.Compare(len(a.whole), len(b.whole)); c != 0 {
		return c
	}
	if c := strings.Compare(a.whole, b.whole); c != 0 {
		return c
	}
	return strings.Compare(a.fraction, b.fraction)
}

// plainDecimal is a number as a build number or a Unix time is written: no sign, exponent, base
// or fraction bar.
var plainDecimal = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?$`)

// keyOf is what tag is ordered by, or why the policy cannot read it (a Skip reason).
func (p *Policy) keyOf(tag string) (key, string) {
	if p.order == followedTag {
		if digest, ok := strings.CutPrefix(tag, p.follow+"@"); !ok || !sha256Digest.MatchString(digest) {
			return key{}, SkipNotFollowed
		}
		return key{text: tag}, ""
	}
	s := tag
	if p.pattern != nil {
		m := p.pattern.FindStringSubmatchIndex(tag)
		if m == nil {
			return key{}, SkipFiltered
		}
		if p.extract != "" {
			s = string(p.pattern.ExpandString(nil, p.extract, tag, m))
		}
	}
	switch p.order {
	case Numerical:
		if !plainDecimal.MatchString(s) {
			return key{}, SkipNotANumber
		}
		return key{num: parseDecimal(s)}, ""
	case Alphabetical:
		return key{text: s}, ""
	}
	v, err := semver.NewVersion(s)
	if err != nil {
		return key{}, SkipNotSemver
	}
	return key{sv: v}, ""
}

// compare orders two tags by their keys, newest last. Under semver two spellings of one version
// (1.2.0, v1.2.0) are equal; under the other orders two tags of one key (two builds of one second)
// are ordered by their text, so that each is newer or older than the other. Digests of a followed
// tag have no order (see newer): they compare as their text, which says nothing.
func (p *Policy) compare(a key, tagA string, b key, tagB string) int {
	var c int
	switch p.order {
	case Numerical:
		c = a.num.cmp(b.num)
	case Alphabetical, followedTag:
		c = strings.Compare(a.text, b.text)
	default:
		return a.sv.Compare(b.sv)
	}
	if p.descending {
		c = -c
	}
	if c == 0 {
		c = strings.Compare(tagA, tagB)
	}
	return c
}

// Reads reports whether the policy reads tag as a version.
func (p *Policy) Reads(tag string) bool {
	_, skip := p.keyOf(tag)
	return skip == ""
}

// Compare orders two tags the policy reads, newest last (see compare). ok is false when the
// policy cannot read one of them, and for two digests of a followed tag, which have no order.
func (p *Policy) Compare(a, b string) (c int, ok bool) {
	ka, skipA := p.keyOf(a)
	kb, skipB := p.keyOf(b)
	if skipA != "" || skipB != "" || p.order == followedTag && a != b {
		return 0, false
	}
	return p.compare(ka, a, kb, b), true
}

// allows: within the constraint (semver; every key of the other orders is).
func (p *Policy) allows(k key) bool {
	return p.constraint == nil || p.constraint.Check(k.sv)
}

// Choose picks from candidates. current is the version running now; when it is "" (or the policy
// cannot read it) nothing can be compared and any version the rules allow counts as newer, so a
// caller that must not downgrade checks it first. failed holds exact tag strings: "1.2.0" does not
// exclude "v1.2.0".
func (p *Policy) Choose(candidates []string, current string, failed []string) Choice {
	return p.ChooseHeld(candidates, current, failed, nil)
}

// ChooseHeld is Choose, with hold asked of each candidate that is eligible otherwise (and of no
// other): a candidate it holds is skipped (SkipHeld), and the newest of them above the choice is
// Choice.Held. A nil hold holds nothing.
func (p *Policy) ChooseHeld(candidates []string, current string, failed []string, hold func(tag string) bool) Choice {
	cur, curSkip := p.keyOf(current)
	type pick struct {
		k   key
		tag string
	}
	newer := func(k key, tag string, than *pick) bool {
		if than != nil && p.order == followedTag {
			// The digest the tag names now is the newest, whichever it is.
			return tag != than.tag
		}
		return than == nil || p.compare(k, tag, than.k, than.tag) > 0
	}

	var choice Choice
	var best, held *pick
	seen := map[string]bool{}
	for _, tag := range candidates {
		if seen[tag] {
			choice.Skipped = append(choice.Skipped, Skip{tag, SkipDuplicate})
			continue
		}
		seen[tag] = true
		k, skip := p.keyOf(tag)
		switch {
		case skip != "":
			choice.Skipped = append(choice.Skipped, Skip{tag, skip})
		case !p.allows(k):
			choice.Skipped = append(choice.Skipped, Skip{tag, SkipConstraint})
		case curSkip == "" && !newer(k, tag, &pick{cur, current}):
			choice.Skipped = append(choice.Skipped, Skip{tag, SkipNotNewer})
		case slices.Contains(failed, tag):
			choice.Skipped = append(choice.Skipped, Skip{tag, SkipFailed})
		case hold != nil && hold(tag):
			choice.Skipped = append(choice.Skipped, Skip{tag, SkipHeld})
			if newer(k, tag, held) {
				held, choice.Held = &pick{k, tag}, tag
			}
		default:
			// Of two spellings of one semver version the first one seen wins, so the result
			// does not depend on anything but the input order.
			if newer(k, tag, best) {
				best, choice.Tag = &pick{k, tag}, tag
			}
		}
	}
	if held != nil && best != nil && !newer(held.k, held.tag, best) {
		choice.Held = ""
	}
	return choice
}

package version

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Tags that are not semver are chosen by the rules they are given, as Flux's ImagePolicy orders
// them: by a number or by text, of the whole tag or of what a pattern extracts.
func TestChooseByTagRules(t *testing.T) {
	commitAndTime := Rules{Order: Numerical, Pattern: `^main-[0-9a-f]{7}-(?P<ts>[0-9]+)$`, Extract: "$ts"}
	cases := []struct {
		name       string
		rules      Rules
		candidates []string
		current    string
		failed     []string
		want       Choice
	}{
		{name: "the newest main build by its time; other branches and latest are filtered out", rules: commitAndTime,
			candidates: []string{"main-3f2a9c1-1733140000", "main-aa00bb1-1733150000", "feature-x-1733160000", "latest"},
			current:    "main-3f2a9c1-1733140000",
			want: Choice{Tag: "main-aa00bb1-1733150000", Skipped: []Skip{{"main-3f2a9c1-1733140000", SkipNotNewer},
				{"feature-x-1733160000", SkipFiltered}, {"latest", SkipFiltered}}}},
		{name: "a failed build is passed over for the one before it", rules: commitAndTime,
			candidates: []string{"main-aa00bb1-1733150000", "main-bb11cc2-1733160000"}, current: "main-3f2a9c1-1733140000",
			failed: []string{"main-bb11cc2-1733160000"},
			want:   Choice{Tag: "main-aa00bb1-1733150000", Skipped: []Skip{{"main-bb11cc2-1733160000", SkipFailed}}}},
		{name: "numbers compare as numbers, not text", rules: Rules{Order: Numerical},
			candidates: []string{"9", "10", "8.5"}, current: "2", want: Choice{Tag: "10"}},
		{name: "numbers are plain decimals: no sign, exponent, base, fraction or infinity", rules: Rules{Order: Numerical},
			candidates: []string{"1e9", "0x10", "1/2", "+5", "inf", "NaN", "3"}, current: "2",
			want: Choice{Tag: "3", Skipped: []Skip{{"1e9", SkipNotANumber}, {"0x10", SkipNotANumber}, {"1/2", SkipNotANumber},
				{"+5", SkipNotANumber}, {"inf", SkipNotANumber}, {"NaN", SkipNotANumber}}}},
		{name: "long numbers compare exactly", rules: Rules{Order: Numerical},
			candidates: []string{"1733140000000000001", "1733140000000000002"}, current: "1733140000000000000",
			want: Choice{Tag: "1733140000000000002"}},
		{name: "descending: the lowest is the newest", rules: Rules{Order: Numerical, Descending: true},
			candidates: []string{"5", "3", "7"}, current: "6",
			want: Choice{Tag: "3", Skipped: []Skip{{"7", SkipNotNewer}}}},
		{name: "dates with fixed-width parts, alphabetically", rules: Rules{Order: Alphabetical, Pattern: `^\d{4}\.\d{2}\.\d{2}-\d{2}$`},
			candidates: []string{"2026.12.02-09", "2026.12.02-10", "2026.11.30-99", "stable"}, current: "2026.12.01-01",
			want: Choice{Tag: "2026.12.02-10", Skipped: []Skip{{"2026.11.30-99", SkipNotNewer}, {"stable", SkipFiltered}}}},
		{name: "two builds of one second: the tie is broken by the tag's text, so the second is newer", rules: commitAndTime,
			candidates: []string{"main-bbbbbbb-1733150000"}, current: "main-aaaaaaa-1733150000",
			want: Choice{Tag: "main-bbbbbbb-1733150000"}},
		{name: "semver with a flavour kept by the pattern", rules: Rules{Constraint: ">=1.0.0", Pattern: `^v?(?P<v>[0-9.]+)-alpine$`, Extract: "$v"},
			candidates: []string{"1.4.0", "1.4.0-alpine", "1.5.0-alpine", "1.6.0"}, current: "1.3.0-alpine",
			want: Choice{Tag: "1.5.0-alpine", Skipped: []Skip{{"1.4.0", SkipFiltered}, {"1.6.0", SkipFiltered}}}},
		{name: "no current version: any build counts as newer", rules: Rules{Order: Numerical},
			candidates: []string{"4", "5"}, want: Choice{Tag: "5"}},
		{name: "a followed tag: the digest it names now replaces the one that runs", rules: Rules{Follow: "stable"},
			candidates: []string{followed("b")}, current: followed("a"), want: Choice{Tag: followed("b")}},
		{name: "a followed tag moved back to an older digest: that is what it names now", rules: Rules{Follow: "stable"},
			candidates: []string{followed("0")}, current: followed("f"), want: Choice{Tag: followed("0")}},
		{name: "a followed tag that still names the digest that runs: nothing newer", rules: Rules{Follow: "stable"},
			candidates: []string{followed("a")}, current: followed("a"),
			want: Choice{Skipped: []Skip{{followed("a"), SkipNotNewer}}}},
		{name: "a followed tag that names a digest that failed: held", rules: Rules{Follow: "stable"},
			candidates: []string{followed("b")}, current: followed("a"), failed: []string{followed("b")},
			want: Choice{Skipped: []Skip{{followed("b"), SkipFailed}}}},
		{name: "a followed tag on a workload that runs it without a digest: any digest", rules: Rules{Follow: "stable"},
			candidates: []string{followed("b")}, current: "", want: Choice{Tag: followed("b")}},
		{name: "a followed tag reads only digests of that tag", rules: Rules{Follow: "stable"},
			candidates: []string{"stable", "1.2.0", "latest@sha256:" + strings.Repeat("b", 64), "stable@sha256:bb", "stable@sha512:" + strings.Repeat("b", 64)},
			current:    followed("a"),
			want: Choice{Skipped: []Skip{{"stable", SkipNotFollowed}, {"1.2.0", SkipNotFollowed},
				{"latest@sha256:" + strings.Repeat("b", 64), SkipNotFollowed}, {"stable@sha256:bb", SkipNotFollowed},
				{"stable@sha512:" + strings.Repeat("b", 64), SkipNotFollowed}}}},
		{name: "a held build above the choice is named", rules: Rules{Order: Numerical},
			candidates: []string{"4", "5"}, current: "3", want: Choice{Tag: "4", Held: "5", Skipped: []Skip{{"5", SkipHeld}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Parse(tc.rules)
			if err != nil {
				t.Fatal(err)
			}
			var hold func(string) bool
			if tc.want.Held != "" {
				hold = func(tag string) bool { return tag == tc.want.Held }
			}
			if diff := cmp.Diff(tc.want, p.ChooseHeld(tc.candidates, tc.current, tc.failed, hold)); diff != "" {
				t.Errorf("choice (-want +got):\n%s", diff)
			}
		})
	}
}

// Rules that could not order tags, or would cost every look too much, are refused with what is
// wrong, never taken to mean "no tags".
func TestRulesThatCannotOrderAreRefused(t *testing.T) {
	cases := []struct {
		rules Rules
		want  string
	}{
		{Rules{Constraint: ">=1.0"}, ""},
		{Rules{Constraint: "not a range"}, "constraint: invalid version constraint"},
		{Rules{Order: Numerical, Constraint: ">=1.0.0"}, "constraint: a version constraint applies to semver tags"},
		{Rules{Descending: true}, "order: semver versions are newest when highest"},
		{Rules{Order: "chronological"}, `order: unknown tag order "chronological"`},
		{Rules{Order: Numerical, Extract: "$1"}, "extract: needs a pattern"},
		{Rules{Order: Numerical, Pattern: "main-(["}, "pattern: error parsing regexp"},
		{Rules{Order: Numerical, Pattern: strings.Repeat("a", MaxPatternLength+1)}, "pattern: 257 characters"},
		{Rules{Order: Numerical, Pattern: `^\w{1000}-\w{1000}-\w{1000}$`}, "pattern: too complex"},
		{Rules{Order: Numerical, Pattern: `^main-(?P<ts>\d+)$`, Extract: "$time"}, "extract: $time: the pattern has no group of that name (it has ts)"},
		{Rules{Order: Numerical, Pattern: `^main-(\d+)$`, Extract: "${2}"}, "extract: $2: the pattern has 1 groups"},
		{Rules{Order: Numerical, Pattern: `^main-(?P<ts>\d+)$`, Extract: "${ts}"}, ""},
		{Rules{Order: Alphabetical, Pattern: `^build-(\d+)$`, Extract: "$$1 $1"}, ""},
		{Rules{Order: Alphabetical}, "pattern: alphabetical order needs a pattern"},
		{Rules{Follow: "stable"}, ""},
		{Rules{Follow: "stable", Order: Numerical}, "order: a followed tag is not ordered"},
		{Rules{Follow: "stable", Constraint: ">=1.0.0"}, "constraint: a version constraint applies to semver tags, not to a followed tag"},
		{Rules{Follow: "stable", Pattern: "^stable$"}, "pattern: a followed tag is not filtered"},
		{Rules{Follow: "stable:1"}, `follow: "stable:1" is not an image tag`},
	}
	for _, tc := range cases {
		_, err := Parse(tc.rules)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v: %v", tc.rules, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%+v: error %v, want one with %q", tc.rules, err, tc.want)
		}
	}
}

// Compare orders what the policy reads and says when it cannot.
func TestCompareTags(t *testing.T) {
	p, _ := Parse(Rules{Order: Numerical, Pattern: `^build-(?P<n>\d+)$`, Extract: "$n"})
	if c, ok := p.Compare("build-9", "build-10"); !ok || c >= 0 {
		t.Errorf("build-9 vs build-10: %d %v", c, ok)
	}
	if _, ok := p.Compare("build-9", "latest"); ok {
		t.Error("latest compared")
	}
	if !p.Reads("build-1") || p.Reads("1.0.0") || p.Semver() {
		t.Error("Reads or Semver")
	}
}

// followed is a digest of the tag stable, of the hex digit h repeated.
func followed(h string) string { return "stable@sha256:" + strings.Repeat(h, 64) }

// Two digests of a followed tag have no order: only one digest and itself compare.
func TestFollowedDigestsHaveNoOrder(t *testing.T) {
	p, _ := Parse(Rules{Follow: "stable"})
	if c, ok := p.Compare(followed("a"), followed("a")); !ok || c != 0 {
		t.Errorf("a digest vs itself: %d %v", c, ok)
	}
	if _, ok := p.Compare(followed("a"), followed("b")); ok {
		t.Error("two digests compared")
	}
	if !p.Reads(followed("a")) || p.Reads("stable") || p.Semver() {
		t.Error("Reads or Semver")
	}
}

// Plain decimals compare exactly, by value, however long: leading and trailing zeros change nothing.
func TestDecimalsCompareExactly(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"10", "9", 1},
		{"0100", "100", 0},
		{"1.50", "1.5", 0},
		{"0.5", "0.45", 1},
		{"2", "2.000001", -1},
		{"17331400000000000000001", "17331400000000000000000", 1},
		{"0", "000", 0},
	} {
		if got := parseDecimal(tc.a).cmp(parseDecimal(tc.b)); got != tc.want {
			t.Errorf("%s vs %s: %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

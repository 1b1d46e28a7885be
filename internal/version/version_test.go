package version

import (
	"reflect"
	"strings"
	"testing"
)

func TestChoose(t *testing.T) {
	cases := []struct {
		name        string
		constraint  string
		candidates  []string
		current     string
		failed      []string
		want        string
		wantSkipped []Skip
	}{
		{name: "highest wins", constraint: ">=1.0.0", candidates: []string{"1.1.0", "1.3.0", "1.2.0"}, current: "1.0.0", want: "1.3.0"},
		{name: "nothing newer", constraint: ">=1.0.0", candidates: []string{"1.0.0", "0.9.0"}, current: "1.0.0", want: "",
			wantSkipped: []Skip{{"1.0.0", SkipNotNewer}, {"0.9.0", SkipConstraint}}},
		{name: "constraint caps the major", constraint: ">=1.0.0, <2.0.0", candidates: []string{"2.0.0", "1.4.0"}, current: "1.3.0", want: "1.4.0",
			wantSkipped: []Skip{{"2.0.0", SkipConstraint}}},
		{name: "failed version skipped, next best taken", constraint: ">=1.0.0", candidates: []string{"1.2.0", "1.1.0"}, current: "1.0.0",
			failed: []string{"1.2.0"}, want: "1.1.0", wantSkipped: []Skip{{"1.2.0", SkipFailed}}},
		{name: "failed list matches exact strings only", constraint: ">=1.0.0", candidates: []string{"v1.2.0"}, current: "1.0.0",
			failed: []string{"1.2.0"}, want: "v1.2.0"},
		{name: "non-semver tags ignored", constraint: ">=1.0.0", candidates: []string{"latest", "sha-abc1234", "nightly", "1.1.0"}, current: "1.0.0", want: "1.1.0",
			wantSkipped: []Skip{{"latest", SkipNotSemver}, {"sha-abc1234", SkipNotSemver}, {"nightly", SkipNotSemver}}},
		{name: "only non-semver", constraint: ">=0.0.0", candidates: []string{"latest"}, current: "1.0.0", want: "",
			wantSkipped: []Skip{{"latest", SkipNotSemver}}},
		{name: "v prefix is semver", constraint: ">=1.0.0", candidates: []string{"v1.5.0"}, current: "v1.4.0", want: "v1.5.0"},
		{name: "two spellings of one version: first wins", constraint: ">=1.0.0", candidates: []string{"1.5.0", "v1.5.0"}, current: "1.0.0", want: "1.5.0"},
		{name: "prerelease needs a prerelease constraint", constraint: ">=1.0.0", candidates: []string{"1.5.0-rc.1"}, current: "1.0.0", want: "",
			wantSkipped: []Skip{{"1.5.0-rc.1", SkipConstraint}}},
		{name: "prerelease allowed by constraint", constraint: ">=1.5.0-0", candidates: []string{"1.5.0-rc.1", "1.5.0-rc.2"}, current: "1.4.0", want: "1.5.0-rc.2"},
		{name: "release beats its prerelease", constraint: ">=1.0.0-0", candidates: []string{"1.5.0", "1.5.0-rc.1"}, current: "1.4.0", want: "1.5.0"},
		{name: "build metadata is not newer", constraint: ">=1.0.0", candidates: []string{"1.4.0+build.7"}, current: "1.4.0", want: "",
			wantSkipped: []Skip{{"1.4.0+build.7", SkipNotNewer}}},
		{name: "no current version: highest allowed", constraint: ">=1.0.0", candidates: []string{"1.1.0", "0.5.0"}, current: "", want: "1.1.0",
			wantSkipped: []Skip{{"0.5.0", SkipConstraint}}},
		{name: "empty constraint means any release", constraint: "", candidates: []string{"3.0.0"}, current: "1.0.0", want: "3.0.0"},
		{name: "duplicates from two sources", constraint: ">=1.0.0", candidates: []string{"1.1.0", "1.1.0"}, current: "1.0.0", want: "1.1.0",
			wantSkipped: []Skip{{"1.1.0", SkipDuplicate}}},
		{name: "no candidates", constraint: ">=1.0.0", current: "1.0.0", want: ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := NewPolicy(tc.constraint)
			if err != nil {
				t.Fatal(err)
			}
			got := p.Choose(tc.candidates, tc.current, tc.failed)
			if got.Tag != tc.want {
				t.Errorf("Tag = %q, want %q", got.Tag, tc.want)
			}
			if !reflect.DeepEqual(got.Skipped, tc.wantSkipped) {
				t.Errorf("Skipped = %v, want %v", got.Skipped, tc.wantSkipped)
			}
		})
	}
}

func TestInvalidConstraintIsAnError(t *testing.T) {
	for _, c := range []string{">=banana", "1.0.0 ||| 2", "~>"} {
		if _, err := NewPolicy(c); err == nil || !strings.Contains(err.Error(), "invalid version constraint") {
			t.Errorf("NewPolicy(%q) error = %v", c, err)
		}
	}
}

// A current version that is not semver compares nothing (the caller holds such a config).
func TestUnparsableCurrentVersionComparesNothing(t *testing.T) {
	p, err := NewPolicy(">=1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Choose([]string{"1.1.0"}, "latest", nil); got.Tag != "1.1.0" {
		t.Errorf("Tag = %q, want 1.1.0", got.Tag)
	}
}

func TestNewMajor(t *testing.T) {
	for _, c := range []struct {
		current, tag string
		want         bool
	}{
		{"1.3.0", "1.4.0", false},
		{"1.3.0", "1.3.1", false},
		{"1.3.0", "2.0.0", true},
		{"v1.9", "v2", true},
		{"0.9.0", "1.0.0", true},
		{"2.0.0", "1.9.0", false},
		{"1.3.0", "2.0.0-rc.1", true},
		{"main", "1.0.0", true},
		{"1.0.0", "latest", true},
	} {
		if got := NewMajor(c.current, c.tag); got != c.want {
			t.Errorf("NewMajor(%q, %q) = %v, want %v", c.current, c.tag, got, c.want)
		}
	}
}

// A hold is asked of eligible candidates only; what it holds is skipped, and the highest held one
// above the choice is named.
func TestChooseHeld(t *testing.T) {
	p, err := NewPolicy(">=1.0.0, <2.0.0")
	if err != nil {
		t.Fatal(err)
	}
	young := map[string]bool{"1.5.0": true, "1.3.0": true}
	for _, tc := range []struct {
		name       string
		candidates []string
		wantTag    string
		wantHeld   string
		wantAsked  string
	}{
		{name: "the newest is held: the next one is chosen", candidates: []string{"1.4.0", "1.5.0", "2.0.0", "latest", "1.1.0"},
			wantTag: "1.4.0", wantHeld: "1.5.0", wantAsked: "1.4.0,1.5.0"},
		{name: "all held", candidates: []string{"1.3.0", "1.5.0"}, wantHeld: "1.5.0", wantAsked: "1.3.0,1.5.0"},
		{name: "a held one below the choice is not named", candidates: []string{"1.3.0", "1.4.0"}, wantTag: "1.4.0", wantAsked: "1.3.0,1.4.0"},
		{name: "failed and older ones are not asked", candidates: []string{"1.2.0", "1.0.0"}, wantAsked: ""},
	} {
		var asked []string
		ch := p.ChooseHeld(tc.candidates, "1.1.0", []string{"1.2.0"}, func(tag string) bool {
			asked = append(asked, tag)
			return young[tag]
		})
		if ch.Tag != tc.wantTag || ch.Held != tc.wantHeld || strings.Join(asked, ",") != tc.wantAsked {
			t.Errorf("%s: chose %q, held %q, asked %v; want %q, %q, %s", tc.name, ch.Tag, ch.Held, asked, tc.wantTag, tc.wantHeld, tc.wantAsked)
		}
	}
}

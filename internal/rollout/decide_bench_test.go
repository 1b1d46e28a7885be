package rollout

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkDecideWith10000RegistryTags measures one decision of an idle config whose registry
// announces 10,000 tags that are not semver (CI builds): every reconcile of such a config pays it.
func BenchmarkDecideWith10000RegistryTags(b *testing.B) {
	cands := make([]Candidate, 0, 10001)
	for i := range 10000 {
		cands = append(cands, Candidate{Tag: fmt.Sprintf("sha-%07x", i), Source: "registry"})
	}
	cands = append(cands, Candidate{Tag: "1.1.0", Source: "registry"})
	in := Input{Now: now, Config: config(current("1.1.0")), Workload: deploymentAt("1.1.0", healthy), Candidates: cands}
	b.ReportAllocs()
	for b.Loop() {
		Decide(in)
	}
}

// BenchmarkDecideWith10000YoungVersions measures one decision of a config with spec.minReleaseAge
// whose registry announces 10,000 versions above the current one, all too young: each is asked
// for its age, and the newest 20 first sights are kept.
func BenchmarkDecideWith10000YoungVersions(b *testing.B) {
	cands := make([]Candidate, 0, 10000)
	for i := range 10000 {
		cands = append(cands, Candidate{Tag: fmt.Sprintf("1.%d.%d", 2+i/100, i%100), Source: "registry"})
	}
	in := Input{Now: now, Config: config(current("1.1.0"), minAge(time.Hour)), Workload: deploymentAt("1.1.0", healthy), Candidates: cands}
	b.ReportAllocs()
	for b.Loop() {
		Decide(in)
	}
}

// BenchmarkDecideWith10000BuildTags measures one decision of an idle config that orders builds by
// a tag policy (commit and Unix time, filtered and extracted by a pattern) and whose registry
// announces 10,000 of them, one newer than the running build: the pattern runs against each tag.
func BenchmarkDecideWith10000BuildTags(b *testing.B) {
	cands := make([]Candidate, 0, 10000)
	for i := range 10000 {
		cands = append(cands, Candidate{Tag: fmt.Sprintf("main-%07x-%d", i, 1733140000+i), Source: "registry"})
	}
	running := fmt.Sprintf("main-%07x-%d", 9998, 1733140000+9998)
	in := Input{Now: now, Config: config(builds, current(running)), Workload: deploymentAt(running, healthy), Candidates: cands}
	if d := Decide(in); d.Status.TargetVersion != cands[9999].Tag {
		b.Fatalf("target %q, want %s", d.Status.TargetVersion, cands[9999].Tag)
	}
	b.ReportAllocs()
	for b.Loop() {
		Decide(in)
	}
}

package renovate

import (
	"os"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rollgate/rollgate/api/v1alpha1"
)

func readReport(t *testing.T) *Report {
	t.Helper()
	f, err := os.Open("testdata/report.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestParseRejectsWhatIsNotAReport(t *testing.T) {
	cases := map[string]string{
		"not JSON":                   "this is not json",
		"empty":                      "",
		"no repositories":            `{"problems": []}`,
		"repositories of wrong type": `{"repositories": []}`,
		"repository without files":   `{"repositories": {"local": {"problems": []}}}`,
		"files of wrong type":        `{"repositories": {"local": {"packageFiles": {"regex": {"deps": 1}}}}}`,
	}
	for name, input := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := Parse(strings.NewReader(input)); err == nil || !strings.Contains(err.Error(), "Renovate") {
				t.Errorf("error = %v", err)
			}
		})
	}
}

func TestDependenciesLeavesOutSkippedAndNonDocker(t *testing.T) {
	deps := readReport(t).Dependencies()
	var got []string
	for _, d := range deps {
		got = append(got, d.Manager+":"+d.DepName)
	}
	want := "kubernetes:127.0.0.1:5055/demo/sidecar regex:127.0.0.1:5055/demo/app regex:127.0.0.1:5055/demo/api"
	if strings.Join(got, " ") != want {
		t.Errorf("dependencies %v", got)
	}
}

func ruc(ns, name, img, constraint string, av string) v1alpha1.RollingUpgradeConfig {
	c := v1alpha1.RollingUpgradeConfig{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.RollingUpgradeConfigSpec{Image: img, VersionConstraint: constraint}}
	if av != "" {
		c.Spec.Sources = []v1alpha1.VersionSource{{ApplicationVersion: &v1alpha1.ApplicationVersionSource{Name: av}}}
	}
	return c
}

func TestPlan(t *testing.T) {
	deps := readReport(t).Dependencies()
	configs := []v1alpha1.RollingUpgradeConfig{
		ruc("shop", "web", "127.0.0.1:5055/demo/app", ">=1.0.0, <2.0.0", "web"),   // 1.3.0, not the major 2.0.0
		ruc("shop", "web-next", "127.0.0.1:5055/demo/app", ">=2.0.0", "web-next"), // the major
		ruc("shop", "api", "127.0.0.1:5055/demo/api", ">=0.0.0", "api"),           // already at 0.9.4
		ruc("shop", "newer", "127.0.0.1:5055/demo/api", ">=0.0.0", "newer"),       // already ahead: kept
		ruc("shop", "nosource", "127.0.0.1:5055/demo/sidecar", "", ""),            // no applicationVersion source
		ruc("shop", "other", "ghcr.io/acme/unrelated", "", "other"),               // Renovate knows nothing of it
	}
	existing := map[string]string{"shop/web": "1.0.0", "shop/api": "0.9.4", "shop/newer": "1.0.0"}
	changes, skipped := Plan(deps, configs, existing)
	var got []string
	for _, c := range changes {
		got = append(got, c.String())
	}
	want := []string{
		"shop/web: ApplicationVersion web 1.0.0 -> 1.3.0 for 127.0.0.1:5055/demo/app, from apps/web/appversion.yaml (regex)",
		"shop/web-next: ApplicationVersion web-next (new) -> 2.0.0 for 127.0.0.1:5055/demo/app, from apps/web/appversion.yaml (regex)",
		"shop/api: ApplicationVersion api 0.9.4 (unchanged) for 127.0.0.1:5055/demo/api, from apps/api/versions.yaml (regex)",
		"shop/newer: ApplicationVersion newer 1.0.0 (unchanged) for 127.0.0.1:5055/demo/api, from apps/api/versions.yaml (regex)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("changes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(skipped) != 1 || !strings.Contains(skipped[0], "shop/nosource") || !strings.Contains(skipped[0], "no applicationVersion source") {
		t.Errorf("skipped %v", skipped)
	}
	// The report's release time goes with the version it dates (spec.minReleaseAge counts from it).
	if at := changes[0].ReleasedAt; !at.Equal(time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)) || !changes[1].ReleasedAt.IsZero() {
		t.Errorf("released: 1.3.0 at %s, 2.0.0 at %s; want the report's time for 1.3.0 and none for 2.0.0", at, changes[1].ReleasedAt)
	}
}

// A config that orders its builds by a tag policy gets the newest build Renovate found by that
// policy, not by semver (which reads build-9 as 9.0.0 and misses main builds altogether).
func TestPlanFollowsAConfigsTagPolicy(t *testing.T) {
	deps := []Dependency{{DepName: "ghcr.io/acme/worker", Manager: "regex", PackageFile: "apps/worker/appversion.yaml",
		Updates: []Update{{NewValue: "build-9"}, {NewValue: "build-12"}, {NewValue: "latest"}}}}
	c := ruc("shop", "worker", "ghcr.io/acme/worker", ">=0.0.0", "worker")
	c.Spec.TagPolicy = &v1alpha1.TagPolicy{Numerical: &v1alpha1.TagOrder{}}
	c.Spec.FilterTags = &v1alpha1.TagFilter{Pattern: `^build-(?P<n>[0-9]+)$`, Extract: "$n"}
	changes, skipped := Plan(deps, []v1alpha1.RollingUpgradeConfig{c}, map[string]string{"shop/worker": "build-10"})
	if len(changes) != 1 || changes[0].From != "build-10" || changes[0].To != "build-12" || len(skipped) != 0 {
		t.Errorf("changes %v, skipped %v; want build-10 -> build-12", changes, skipped)
	}
}

func TestPlanWithNoMatchingImageChangesNothing(t *testing.T) {
	changes, skipped := Plan(readReport(t).Dependencies(), []v1alpha1.RollingUpgradeConfig{ruc("shop", "x", "ghcr.io/other/x", "", "x")}, nil)
	if len(changes) != 0 || len(skipped) != 0 {
		t.Errorf("changes %v, skipped %v", changes, skipped)
	}
}

func TestProblemsAreListedWithTheirLevel(t *testing.T) {
	r, err := Parse(strings.NewReader(`{"problems": [{"level": 40, "msg": "RE2 not usable"}],
		"repositories": {"local": {"problems": [{"level": 50, "msg": "lookup failed"}], "packageFiles": {}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(r.AllProblems(), "|"); got != "warn: RE2 not usable|local: error: lookup failed" {
		t.Errorf("problems %q", got)
	}
}

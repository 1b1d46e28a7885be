package rollout

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rollgate/rollgate/api/v1alpha1"
)

// follows makes a config follow the tag stable, as the API server writes it.
func follows(c *v1alpha1.RollingUpgradeConfig) {
	c.Spec.VersionConstraint = defaultConstraint
	c.Spec.FollowTag = "stable"
}

// digestOf is a digest of the hex digit h repeated, and stableAt the version stable names at it.
func digestOf(h string) string { return "sha256:" + strings.Repeat(h, 64) }
func stableAt(h string) string { return "stable@" + digestOf(h) }

// A followed tag's digests are its versions: the one it names now replaces the one that runs,
// pinned by digest, and the failed list, requests and hand targets name them so.
func TestFollowingATag(t *testing.T) {
	a, b, c := stableAt("a"), stableAt("b"), stableAt("c")
	cases := []decisionCase{
		{name: "a new digest of the tag starts, pinned by it", config: config(follows, current(a)), workload: deploymentAt(a, healthy),
			candidates: av(b), wantReason: v1alpha1.ReasonProgressing, wantTarget: repo + ":" + b, wantCurrent: a},
		{name: "the digest that runs is no update", config: config(follows, current(a)), workload: deploymentAt(a, healthy),
			candidates: av(a), wantReason: v1alpha1.ReasonUpToDate, wantCurrent: a},
		{name: "a digest that failed holds, though the tag names it", config: config(follows, current(a), failedList(b)),
			workload: deploymentAt(a, healthy), candidates: av(b), wantReason: v1alpha1.ReasonUpToDate, wantCurrent: a, wantFailed: []string{b}},
		{name: "the tag moved back to a digest that ran before: it is what the tag names", config: config(follows, current(b)),
			workload: deploymentAt(b, healthy), candidates: av(a), wantReason: v1alpha1.ReasonProgressing, wantTarget: repo + ":" + a, wantCurrent: b},
		{name: "a workload pinned by digest when first seen runs that version", config: config(follows), workload: deploymentAt(a, healthy),
			candidates: av(a), wantReason: v1alpha1.ReasonUpToDate, wantCurrent: a},
		{name: "a workload on the bare tag runs no known build, and a rollback could not return to it: held", config: config(follows),
			workload: deploymentAt("stable", healthy), candidates: av(a), wantReason: v1alpha1.ReasonUnversioned,
			wantMessage: "Pin the build it runs by digest"},
		{name: "a workload on the image without a tag runs latest, the bare tag: held", workload: &Workload{Description: "Deployment web", Image: repo, Verdict: healthy},
			config:     config(func(c *v1alpha1.RollingUpgradeConfig) { follows(c); c.Spec.FollowTag = "latest" }),
			candidates: av("latest@" + digestOf("a")), wantReason: v1alpha1.ReasonUnversioned, wantMessage: "Pin the build it runs by digest"},
		{name: "a workload on another tag moves to the followed one", config: config(follows, current("1.2.0")),
			workload: deploymentAt("1.2.0", healthy), candidates: av(a), wantReason: v1alpha1.ReasonProgressing, wantTarget: repo + ":" + a, wantCurrent: "1.2.0"},
		{name: "a rejected digest goes on the failed list", workload: deploymentAt(a, healthy), candidates: av(b),
			config:     config(follows, current(a), annotated(v1alpha1.RejectAnnotation, b, v1alpha1.RejectedByAnnotation, "alice")),
			wantReason: v1alpha1.ReasonUpToDate, wantCurrent: a, wantFailed: []string{b}},
		{name: "a target set by hand of a digest that failed is refused", workload: deploymentAt(a, healthy), candidates: av(a),
			config:     config(follows, current(a), failedList(c), annotated(v1alpha1.TargetImageAnnotation, repo+":"+c)),
			wantReason: v1alpha1.ReasonTargetRefused, wantTarget: repo + ":" + c, wantCurrent: a, wantFailed: []string{c},
			wantMessage: c + " failed its health check before"},
		{name: "a target set by hand of a new digest starts", workload: deploymentAt(a, healthy),
			config:     config(follows, current(a), annotated(v1alpha1.TargetImageAnnotation, repo+":"+c)),
			wantReason: v1alpha1.ReasonProgressing, wantTarget: repo + ":" + c, wantCurrent: a},
	}
	runDecisionCases(t, cases)
}

// A digest that fails its check is rolled back and held while the tag names it; the next digest
// rolls out, and the history names both by tag and digest.
func TestAFollowedTagRolledBackAndMovedOn(t *testing.T) {
	a, b, c := stableAt("a"), stableAt("b"), stableAt("c")
	cfg := config(follows, current(a))
	at := now
	d := Decide(Input{Now: at, Config: cfg, Workload: deploymentAt(a, healthy), Candidates: av(b)})
	if d.Annotations.TargetImage != repo+":"+b {
		t.Fatalf("target %q, want %s", d.Annotations.TargetImage, repo+":"+b)
	}
	cfg = next(cfg, d)
	at = at.Add(11 * time.Minute) // past the health timeout
	d = Decide(Input{Now: at, Config: cfg, Workload: deploymentAt(b, pending), Candidates: av(b)})
	if d.Annotations.Step != StepRollingBack || strings.Join(d.Status.FailedVersions, ",") != b {
		t.Fatalf("step %q, failed %v; want a rollback with %s failed", d.Annotations.Step, d.Status.FailedVersions, b)
	}
	cfg = next(cfg, d)
	at = at.Add(time.Minute)
	d = Decide(Input{Now: at, Config: cfg, Workload: deploymentAt(a, healthy), Candidates: av(b)})
	cfg = next(cfg, d)
	at = at.Add(time.Minute)
	d = Decide(Input{Now: at, Config: cfg, Workload: deploymentAt(a, healthy), Candidates: av(b)})
	if d.Annotations.Step != StepIdle || d.Annotations.TargetImage != "" && d.Annotations.TargetImage != repo+":"+a {
		t.Fatalf("the failed digest starts again: step %q, target %q", d.Annotations.Step, d.Annotations.TargetImage)
	}
	cfg = next(cfg, d)
	at = at.Add(time.Minute)
	d = Decide(Input{Now: at, Config: cfg, Workload: deploymentAt(a, healthy), Candidates: av(c)})
	if d.Annotations.TargetImage != repo+":"+c {
		t.Fatalf("target %q, want %s", d.Annotations.TargetImage, repo+":"+c)
	}
	cfg = next(cfg, d)
	at = at.Add(time.Minute)
	d = Decide(Input{Now: at, Config: cfg, Workload: deploymentAt(c, healthy), Candidates: av(c)})
	var history []string
	for _, h := range d.Status.VersionHistory {
		history = append(history, h.Version+" "+h.Image+" "+string(h.Status))
	}
	want := []string{b + " " + repo + ":" + b + " RolledBack", c + " " + repo + ":" + c + " Healthy"}
	if diff := cmp.Diff(want, history); diff != "" || d.Status.CurrentVersion != c || d.Status.CurrentImage != repo+":"+c {
		t.Errorf("current %s (%s); history (-want +got):\n%s", d.Status.CurrentVersion, d.Status.CurrentImage, diff)
	}
}

// spec.pinDigest beside a followed tag looks the version up and renders it once pinned: the
// version names its digest already.
func TestAFollowedTagPinnedByDigestIsPinnedOnce(t *testing.T) {
	a, b := stableAt("a"), stableAt("b")
	cfg := config(follows, current(a), func(c *v1alpha1.RollingUpgradeConfig) { c.Spec.PinDigest = true })
	in := Input{Now: now, Config: cfg, Workload: deploymentAt(a, healthy), Candidates: av(b)}
	d := Decide(in)
	if len(d.Needs) != 1 {
		t.Fatalf("needs %v, want an image look-up", d.Needs)
	}
	in.Image = &ImageLookup{Image: repo + ":" + b, Digest: digestOf("b")}
	if d = Decide(in); d.Annotations.TargetImage != repo+":"+b {
		t.Errorf("target %q, want %s", d.Annotations.TargetImage, repo+":"+b)
	}
}

// Under spec.minReleaseAge a moving tag's build is as old as the tag's move to it, its first sight:
// a build promoted to the tag long after it was built waits too. A digest the tag no longer names
// is forgotten, so that the list of first sights never fills with them.
func TestAFollowedTagWaitsFromItsMove(t *testing.T) {
	young := func(c *v1alpha1.RollingUpgradeConfig) {
		c.Spec.MinReleaseAge = &metav1.Duration{Duration: time.Hour}
		c.Spec.Sources = []v1alpha1.VersionSource{{Registry: &v1alpha1.RegistrySource{}}}
	}
	cfg := config(follows, current(stableAt("0")), young)
	at := now
	for i, h := range []string{"1", "2", "3"} {
		d := Decide(Input{Now: at, Config: cfg, Workload: deploymentAt(stableAt("0"), healthy), Candidates: av(stableAt(h))})
		if len(d.Needs) > 0 || d.Annotations.TargetImage != "" {
			t.Fatalf("push %d: needs %v, target %q; want it held by its first sight, no build time asked", i, d.Needs, d.Annotations.TargetImage)
		}
		var seen []string
		for _, v := range d.Status.SeenVersions {
			seen = append(seen, v.Version)
		}
		if want := []string{stableAt(h)}; !cmp.Equal(seen, want) {
			t.Fatalf("push %d: seen %v, want %v", i, seen, want)
		}
		cfg, at = next(cfg, d), at.Add(30*time.Minute)
	}
	d := Decide(Input{Now: at.Add(31 * time.Minute), Config: cfg, Workload: deploymentAt(stableAt("0"), healthy), Candidates: av(stableAt("3"))})
	if d.Annotations.TargetImage != repo+":"+stableAt("3") {
		t.Errorf("target %q an hour after the last move, want %s", d.Annotations.TargetImage, stableAt("3"))
	}
}

// What a config records as the version of an image: under a followed tag its tag and digest.
func TestImageVersion(t *testing.T) {
	followed, plain := config(follows).Spec, config().Spec
	for _, tc := range []struct {
		spec v1alpha1.RollingUpgradeConfigSpec
		img  string
		want string
	}{
		{followed, repo + ":" + stableAt("a"), stableAt("a")},
		{followed, repo + ":stable", "stable"},
		{followed, repo + "@" + digestOf("a"), digestOf("a")},
		{plain, repo + ":1.2.0@" + digestOf("a"), "1.2.0"},
		{plain, repo + "@" + digestOf("a"), digestOf("a")},
	} {
		if got := ImageVersion(tc.spec, tc.img); got != tc.want {
			t.Errorf("%s (follow %q): %q, want %q", tc.img, tc.spec.FollowTag, got, tc.want)
		}
	}
}

// A target set by hand to the bare tag of a pinned image does not unpin the workload: the kubelet
// would pull whatever the tag names then, a failed build among them, with no check.
func TestABareTagByHandDoesNotUnpin(t *testing.T) {
	pinned := repo + ":" + stableAt("a")
	cfg := config(follows, current(stableAt("a")), annotated(v1alpha1.TargetImageAnnotation, repo+":stable"))
	if got, _ := RenderImage(cfg, now); got != pinned {
		t.Errorf("renders %q, want %s", got, pinned)
	}
}

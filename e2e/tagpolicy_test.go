//go:build e2e

package e2e

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/registry/registrytest"
)

// TestScenarioBuildsTaggedByCommitAndTime: a registry on 127.0.0.1 holds builds of main tagged by
// commit and Unix time, a feature branch's build and latest. A config that orders them by the time
// rolls out the newest build of main; it never becomes Ready, so it is rolled back and goes on the
// failed list, and the build before it becomes current. The feature build and latest are never
// targeted.
func TestScenarioBuildsTaggedByCommitAndTime(t *testing.T) {
	inNamespaceOnly(t)
	s := newScenario(t, "builds")
	const running, good, broken = "main-1111111-1733140000", "main-2222222-1733150000", "main-3333333-1733160000"
	host := startRegistry(t, running, good, broken, "feature-x-1733170000", "latest")
	repo := host + "/demo/app"
	neverReady(t, s.ns, repo+":"+broken)
	s.create(deployment(s.ns, "app", repo+":"+running, 2), config(listedFrom(repo), func(c *v1alpha1.RollingUpgradeConfig) {
		c.Spec.VersionConstraint = "" // the API server's default, no constraint beside a tag policy
		c.Spec.TagPolicy = &v1alpha1.TagPolicy{Numerical: &v1alpha1.TagOrder{}}
		c.Spec.FilterTags = &v1alpha1.TagFilter{Pattern: `^main-[0-9a-f]{7}-(?P<ts>[0-9]+)$`, Extract: "$ts"}
	}))
	s.start(allowLoopbackRegistries)
	c := s.waitConfig(3*time.Minute, good+" current after "+broken+" was rolled back", func(c *v1alpha1.RollingUpgradeConfig) bool {
		return inPhase(c, v1alpha1.PhaseCompleted) && c.Status.CurrentVersion == good
	})
	var history []string
	for _, h := range c.Status.VersionHistory {
		history = append(history, h.Version+":"+string(h.Status))
	}
	if want := []string{broken + ":RolledBack", good + ":Healthy"}; !slices.Equal(history, want) || !slices.Equal(c.Status.FailedVersions, []string{broken}) ||
		c.Status.CurrentImage != repo+":"+good {
		t.Errorf("history %v, failed %v, image %s; want %v, [%s] and %s", history, c.Status.FailedVersions, c.Status.CurrentImage, want, broken, good)
	}
	for _, e := range s.events() {
		if e.Reason == v1alpha1.EventUpdateStarting && (strings.Contains(e.Message, "feature-x") || strings.Contains(e.Message, ":latest")) {
			t.Errorf("a build outside the filter was rolled out: %s", e.Message)
		}
	}
}

// TestScenarioFollowsAMovingTag: a registry on 127.0.0.1 holds demo/app:stable, and the workload
// runs the build it named, pinned by digest. stable then names a build that never becomes Ready:
// it is rolled out pinned by its digest, rolled back, and held on the failed list while stable
// names it. The next build pushed as stable rolls out and passes. Each is named by tag and digest.
func TestScenarioFollowsAMovingTag(t *testing.T) {
	inNamespaceOnly(t)
	s := newScenario(t, "follow")
	host := startRegistry(t)
	repo := host + "/demo/app"
	running := "stable@" + registrytest.Push(t, host, "demo/app", "stable")
	broken := "stable@" + registrytest.Push(t, host, "demo/app", "stable")
	neverReady(t, s.ns, repo+":"+broken)
	s.create(deployment(s.ns, "app", repo+":"+running, 2), config(listedFrom(repo), func(c *v1alpha1.RollingUpgradeConfig) {
		c.Spec.VersionConstraint = "" // the API server's default, no constraint beside a followed tag
		c.Spec.FollowTag = "stable"
	}))
	s.start(allowLoopbackRegistries)
	s.waitConfig(3*time.Minute, broken+" rolled back", func(c *v1alpha1.RollingUpgradeConfig) bool {
		return slices.Equal(c.Status.FailedVersions, []string{broken}) && c.Status.CurrentVersion == running && c.Annotations[v1alpha1.UpdatePhaseAnnotation] == ""
	})
	good := "stable@" + registrytest.Push(t, host, "demo/app", "stable")
	pushed := time.Now()
	c := s.waitConfig(3*time.Minute, good+" current", func(c *v1alpha1.RollingUpgradeConfig) bool {
		return inPhase(c, v1alpha1.PhaseCompleted) && c.Status.CurrentVersion == good
	})
	t.Logf("from the push of %s to its verdict: %s (registry source interval 1m)", good, time.Since(pushed).Round(time.Second))
	var history []string
	for _, h := range c.Status.VersionHistory {
		history = append(history, h.Version+" "+h.Image+" "+string(h.Status))
	}
	want := []string{broken + " " + repo + ":" + broken + " RolledBack", good + " " + repo + ":" + good + " Healthy"}
	if !slices.Equal(history, want) || !slices.Equal(c.Status.FailedVersions, []string{broken}) || c.Status.CurrentImage != repo+":"+good {
		t.Errorf("history %v, failed %v, image %s; want %v, [%s] and %s", history, c.Status.FailedVersions, c.Status.CurrentImage, want, broken, repo+":"+good)
	}
	if img := s.deploymentImage("app"); img != repo+":"+good {
		t.Errorf("the workload runs %s, want %s", img, repo+":"+good)
	}
}

//go:build e2e

package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rollgate/rollgate/api/v1alpha1"
)

// TestScenarioMinReleaseAgeWithKubectl: a config with spec.minReleaseAge of 20 s. A version whose
// ApplicationVersion dates its release 5 s ago waits Pending until it is 20 s old, then rolls out;
// one without a date waits 20 s from when rollgate first saw it. Everything is done with kubectl.
func TestScenarioMinReleaseAgeWithKubectl(t *testing.T) {
	inNamespaceOnly(t)
	s := newScenario(t, "releaseage")
	const minAge = 20 * time.Second
	s.create(deployment(s.ns, "app", img("1.0.0"), 2), appVersion("1.0.0"), config(func(c *v1alpha1.RollingUpgradeConfig) {
		c.Spec.MinReleaseAge = &metav1.Duration{Duration: minAge}
	}))
	s.start()
	s.waitConfig(time.Minute, "the running version is recorded", func(c *v1alpha1.RollingUpgradeConfig) bool { return c.Status.CurrentVersion == "1.0.0" })

	// Dated by its source: eligible 20 s after its release.
	releasedAt := time.Now().UTC().Truncate(time.Second).Add(-5 * time.Second)
	mustKubectl(t, "-n", s.ns, "patch", "appver", "app", "--type=merge",
		"-p", fmt.Sprintf(`{"spec":{"version":"1.1.0","releasedAt":%q}}`, releasedAt.Format(time.RFC3339)))
	eligible := releasedAt.Add(minAge)
	c := s.waitConfig(time.Minute, "1.1.0 waits for its age", readyReason(v1alpha1.ReasonAwaitingReleaseAge,
		"1.1.0 is eligible from "+eligible.Format(time.RFC3339)+": released "+releasedAt.Format(time.RFC3339)))
	if c.Status.Phase != v1alpha1.PhasePending || c.Status.TargetVersion != "1.1.0" || !c.Status.NextWindow.Time.Equal(eligible) {
		t.Errorf("while too young: %s, next window %v", describeConfig(c), c.Status.NextWindow)
	}
	if get := mustKubectl(t, "-n", s.ns, "get", "ruc", "app"); !strings.Contains(get, "Pending") || !strings.Contains(get, eligible.Format(time.RFC3339)) {
		t.Errorf("kubectl get ruc does not show 1.1.0 Pending until %s:\n%s", eligible.Format(time.RFC3339), get)
	}
	s.completed("1.1.0", 1, time.Minute)
	if started := s.config().Status.VersionHistory[0].AppliedAt.Time; started.Before(eligible) {
		t.Errorf("1.1.0 started at %s, before it was eligible at %s", started, eligible)
	}

	// Not dated: eligible 20 s after rollgate first saw it.
	mustKubectl(t, "-n", s.ns, "patch", "appver", "app", "--type=merge", "-p", `{"spec":{"version":"1.2.0","releasedAt":null}}`)
	c = s.waitConfig(time.Minute, "1.2.0 waits for its age", readyReason(v1alpha1.ReasonAwaitingReleaseAge, "1.2.0 is eligible from "))
	seen := c.Status.SeenVersions
	if len(seen) != 1 || seen[0].Version != "1.2.0" ||
		!readyReason(v1alpha1.ReasonAwaitingReleaseAge, "first seen by rollgate "+seen[0].FirstSeen.UTC().Format(time.RFC3339))(c) {
		t.Fatalf("1.2.0 first seen %v: %s", seen, describeConfig(c))
	}
	c = s.waitConfig(time.Minute, "1.2.0 completed", func(c *v1alpha1.RollingUpgradeConfig) bool {
		return inPhase(c, v1alpha1.PhaseCompleted) && c.Status.CurrentVersion == "1.2.0"
	})
	if started := c.Status.VersionHistory[1].AppliedAt.Time; started.Before(seen[0].FirstSeen.Add(minAge)) {
		t.Errorf("1.2.0 started at %s, before it was %s old (first seen %s)", started, minAge, seen[0].FirstSeen)
	}
	if n := s.countEvents(v1alpha1.EventReleaseAgeRequired); n != 2 {
		t.Errorf("%d ReleaseAgeRequired events, want one per version", n)
	}
}

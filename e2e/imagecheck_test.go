//go:build e2e

package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/crane"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/registry/registrytest"
)

// onARegistry starts scenario prefix on a registry on 127.0.0.1 that holds demo/app:1.0.0: a
// Deployment of replicas pods on it, an ApplicationVersion and a config (changed by mutate) for
// that image, and the manager, which has recorded 1.0.0. It returns the registry's host.
func onARegistry(t *testing.T, prefix string, replicas int32, mutate func(*v1alpha1.RollingUpgradeConfig)) (*scenario, string) {
	t.Helper()
	inNamespaceOnly(t)
	s := newScenario(t, prefix)
	host := startRegistry(t, "1.0.0")
	repo := host + "/demo/app"
	av := appVersion("1.0.0")
	av.Spec.Image = repo
	s.create(deployment(s.ns, "app", repo+":1.0.0", replicas), av, config(func(c *v1alpha1.RollingUpgradeConfig) {
		c.Spec.Image = repo
		mutate(c)
	}))
	s.start(allowLoopbackRegistries)
	s.waitConfig(time.Minute, "the running version is recorded", func(c *v1alpha1.RollingUpgradeConfig) bool { return c.Status.CurrentVersion == "1.0.0" })
	return s, host
}

// TestScenarioPinDigestAndMissingImages: a config with spec.pinDigest, on a registry on 127.0.0.1.
// A version announced before its image was pushed waits ImageNotFound (one Warning event), and
// is not rolled out; once pushed it rolls out by the digest the registry resolved, and the history
// and the workload carry that digest.
func TestScenarioPinDigestAndMissingImages(t *testing.T) {
	s, host := onARegistry(t, "pindigest", 2, func(c *v1alpha1.RollingUpgradeConfig) { c.Spec.PinDigest = true })
	repo := host + "/demo/app"

	s.announce("1.1.0")
	c := s.waitConfig(time.Minute, "1.1.0 waits for its image", readyReason(v1alpha1.ReasonImageNotFound, repo+":1.1.0 is not in its registry"))
	if c.Status.Phase != v1alpha1.PhasePending || c.Status.TargetVersion != "1.1.0" || s.countEvents(v1alpha1.EventUpdateStarting) != 0 {
		t.Fatalf("while the image is missing: %s", describeConfig(c))
	}
	s.waitEvent(10*time.Second, v1alpha1.ReasonImageNotFound, repo+":1.1.0 is not in its registry")

	registrytest.Push(t, host, "demo/app", "1.1.0")
	digest, err := crane.Digest(repo+":1.1.0", crane.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	pinned := repo + ":1.1.0@" + digest
	// Looked up again within a minute (rollout.ImageRecheck).
	c = s.completed("1.1.0", 1, 2*time.Minute)
	if c.Status.CurrentImage != pinned || c.Status.VersionHistory[0].Image != pinned {
		t.Errorf("after the rollout: current %s, history %+v; want %s", c.Status.CurrentImage, c.Status.VersionHistory, pinned)
	}
	if got := s.deploymentImage("app"); got != pinned {
		t.Errorf("the workload runs %s, want %s", got, pinned)
	}
	s.waitEvent(10*time.Second, v1alpha1.EventUpdateStarting, "pinned to the digest the registry resolved")
	if n := s.countEvents(v1alpha1.ReasonImageNotFound); n != 1 {
		t.Errorf("%d ImageNotFound events, want 1", n)
	}
	if get := mustKubectl(t, "-n", s.ns, "describe", "ruc", "app"); !strings.Contains(get, digest) {
		t.Errorf("kubectl describe ruc does not show the digest %s", digest)
	}
}

// TestScenarioTheImageDatesItsRelease: a config with spec.checkImage and spec.minReleaseAge 1h,
// whose ApplicationVersion dates nothing, on a registry on 127.0.0.1. A version whose image was
// built two hours ago rolls out at once (by its first sight it would wait an hour); one built an
// hour less 25 seconds ago waits AwaitingReleaseAge, dated by its build, and starts once an hour
// old, not before.
func TestScenarioTheImageDatesItsRelease(t *testing.T) {
	s, host := onARegistry(t, "built", 1, func(c *v1alpha1.RollingUpgradeConfig) {
		c.Spec.CheckImage = true
		c.Spec.MinReleaseAge = &metav1.Duration{Duration: time.Hour}
	})

	registrytest.PushCreated(t, host, "demo/app", time.Now().Add(-2*time.Hour), "1.1.0")
	s.announce("1.1.0")
	s.completed("1.1.0", 1, time.Minute) // by its first sight it would wait an hour

	built := time.Now().UTC().Add(-time.Hour + 25*time.Second).Truncate(time.Second)
	registrytest.PushCreated(t, host, "demo/app", built, "1.2.0")
	s.announce("1.2.0")
	eligible := built.Add(time.Hour)
	c := s.waitConfig(time.Minute, "1.2.0 waits, dated by its build", readyReason(v1alpha1.ReasonAwaitingReleaseAge,
		"1.2.0 is eligible from "+eligible.Format(time.RFC3339)+": built "+built.Format(time.RFC3339)))
	if c.Status.NextWindow == nil || !c.Status.NextWindow.Time.Equal(eligible) {
		t.Errorf("while too young: next window %v, want %s", c.Status.NextWindow, eligible)
	}
	c = s.completed("1.2.0", 2, time.Minute)
	if started := c.Status.VersionHistory[len(c.Status.VersionHistory)-1].AppliedAt; started.Time.Before(eligible) {
		t.Errorf("1.2.0 started %s, before it was an hour old (%s)", started.UTC().Format(time.RFC3339), eligible.Format(time.RFC3339))
	}
}

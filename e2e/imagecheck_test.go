//go:build e2e

package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/crane"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/controllers/registry/registrytest"
)

// TestScenarioPinDigestAndMissingImages: a config with spec.pinDigest, on a registry on 127.0.0.1.
// A version announced before its image was pushed waits ImageNotFound (one Warning event), and
// is not rolled out; once pushed it rolls out by the digest the registry resolved, and the history
// and the workload carry that digest.
func TestScenarioPinDigestAndMissingImages(t *testing.T) {
	inNamespaceOnly(t)
	s := newScenario(t, "pindigest")
	host := startRegistry(t, "1.0.0")
	repo := host + "/demo/app"
	av := appVersion("1.0.0")
	av.Spec.Image = repo
	s.create(deployment(s.ns, "app", repo+":1.0.0", 2), av, config(func(c *v1alpha1.RollingUpgradeConfig) {
		c.Spec.Image = repo
		c.Spec.PinDigest = true
	}))
	s.start(allowLoopbackRegistries)
	s.waitConfig(time.Minute, "the running version is recorded", func(c *v1alpha1.RollingUpgradeConfig) bool { return c.Status.CurrentVersion == "1.0.0" })

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

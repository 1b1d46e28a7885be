//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	imagev1 "github.com/fluxcd/image-reflector-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rollgate/rollgate/api/v1alpha1"
)

// TestScenarioImagePolicySource: Flux's image automation chooses, rollgate rolls out. The
// ImagePolicy CRD is generated from image-reflector-controller's API module, and the test writes the
// policy's status as that controller would: each latest image it names rolls out with rollgate's
// checks, woken by the watch on the policy, not by a poll.
func TestScenarioImagePolicySource(t *testing.T) {
	inNamespaceOnly(t)
	installExampleCRDs(t, "imagepolicies.image.toolkit.fluxcd.io")
	s := newScenario(t, "imagepolicy")
	policy := &imagev1.ImagePolicy{ObjectMeta: metav1.ObjectMeta{Name: "app"}, Spec: imagev1.ImagePolicySpec{
		ImageRepositoryRef: meta.NamespacedObjectReference{Name: "app"},
		Policy:             imagev1.ImagePolicyChoice{SemVer: &imagev1.SemVerPolicy{Range: ">=1.0.0"}},
	}}
	s.create(deployment(s.ns, "app", appRepo+":1.0.0", 2), policy, config(func(c *v1alpha1.RollingUpgradeConfig) {
		c.Spec.Sources = []v1alpha1.VersionSource{{ImagePolicy: &v1alpha1.ImagePolicySource{Name: "app"}}}
	}))
	choose := func(tag string) {
		t.Helper()
		policy.Status.LatestRef = &imagev1.ImageRef{Name: appRepo, Tag: tag}
		if err := k8s.Status().Update(context.Background(), policy); err != nil {
			t.Fatal(err)
		}
	}
	choose("1.1.0")
	s.start()
	s.waitConfig(2*time.Minute, "1.1.0 current", func(c *v1alpha1.RollingUpgradeConfig) bool {
		return inPhase(c, v1alpha1.PhaseCompleted) && c.Status.CurrentVersion == "1.1.0"
	})
	choose("1.2.0")
	chosen := time.Now()
	s.waitConfig(time.Minute, "1.2.0 started", func(c *v1alpha1.RollingUpgradeConfig) bool {
		return c.Status.TargetVersion == "1.2.0" || c.Status.CurrentVersion == "1.2.0"
	})
	t.Logf("from the ImagePolicy's choice of 1.2.0 to its rollout: %s (no poll: the policy is watched)", time.Since(chosen).Round(10*time.Millisecond))
	s.waitConfig(2*time.Minute, "1.2.0 current", func(c *v1alpha1.RollingUpgradeConfig) bool {
		return inPhase(c, v1alpha1.PhaseCompleted) && c.Status.CurrentVersion == "1.2.0"
	})
	var starts []string
	for _, e := range s.events() {
		if e.Reason == v1alpha1.EventUpdateStarting {
			starts = append(starts, e.Message)
		}
	}
	if len(starts) != 2 || !strings.Contains(starts[0], "from ImagePolicy/app") || !strings.Contains(starts[1], "from ImagePolicy/app") {
		t.Errorf("the starts do not name the ImagePolicy: %q", starts)
	}
}

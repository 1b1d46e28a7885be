//go:build e2e

package e2e

import (
	"net"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"

	"github.com/rollgate/rollgate/api/v1alpha1"
)

// One config whose registry accepts connections and never answers holds neither the manager nor
// another config: in the same manager, a second config's failed version is still rolled back
// within its health timeout, and the first one says its registry is unavailable.
func TestScenarioASilentRegistryStallsNoOtherConfig(t *testing.T) {
	inNamespaceOnly(t)
	s := newScenario(t, "isolation")
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = silent.Close() })
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { _ = c.Close() })
		}
	}()
	silentRepo := silent.Addr().String() + "/demo/silent"
	neverReady(t, s.ns, img("1.1.0"))
	stuck := config(func(c *v1alpha1.RollingUpgradeConfig) {
		c.Name = "silent"
		c.Spec.TargetRef.Name = "silent"
	}, listedFrom(silentRepo))
	s.create(deployment(s.ns, "silent", silentRepo+":1.0.0", 1), stuck,
		deployment(s.ns, "app", img("1.0.0"), 2), appVersion("1.0.0"), config())
	s.start(allowLoopbackRegistries)
	s.waitConfig(time.Minute, "the running version is recorded", func(c *v1alpha1.RollingUpgradeConfig) bool { return c.Status.CurrentVersion == "1.0.0" })

	s.announce("1.1.0")
	announced := time.Now()
	c := s.waitConfig(2*time.Minute, "1.1.0 rolled back", func(c *v1alpha1.RollingUpgradeConfig) bool {
		return c.Annotations[v1alpha1.UpdatePhaseAnnotation] == "" && len(c.Status.FailedVersions) == 1
	})
	// The health timeout is 30 s; the rollback must not wait for the silent registry.
	if took := time.Since(announced); took > 75*time.Second {
		t.Errorf("1.1.0 was rolled back %s after its announcement, with a 30s health timeout", took.Round(time.Second))
	}
	t.Logf("1.1.0 rolled back %s after its announcement: %s", time.Since(announced).Round(time.Second), describeConfig(c))
	waitNamed(t, s.ns, "silent", 2*time.Minute, "the silent registry reported", func(c *v1alpha1.RollingUpgradeConfig) bool {
		r := apimeta.FindStatusCondition(c.Status.Conditions, meta.ReadyCondition)
		return r != nil && r.Reason == v1alpha1.EventRegistryUnavailable
	})
}

//go:build e2e

package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/rollgate/rollgate/api/v1alpha1"
)

// TestScenarioAFreezeWithKubectl: during an incident a person freezes a config's rollouts with a
// deny window (kubectl patch): an announced version is held, the message names the freeze and
// when it ends, and nothing starts; lifting the freeze starts it at once.
func TestScenarioAFreezeWithKubectl(t *testing.T) {
	inNamespaceOnly(t)
	s := newScenario(t, "freeze")
	s.create(deployment(s.ns, "app", img("1.0.0"), 2), appVersion("1.0.0"), config())
	s.start()
	s.waitConfig(time.Minute, "the running version is recorded", func(c *v1alpha1.RollingUpgradeConfig) bool { return c.Status.CurrentVersion == "1.0.0" })

	start, end := time.Now().UTC().Add(-time.Minute).Truncate(time.Second), time.Now().UTC().Add(time.Hour).Truncate(time.Second)
	mustKubectl(t, "-n", s.ns, "patch", "ruc", "app", "--type=merge", "-p", fmt.Sprintf(
		`{"spec":{"windows":[{"name":"incident-4711","type":"Deny","start":%q,"end":%q}]}}`, start.Format(time.RFC3339), end.Format(time.RFC3339)))
	s.announce("1.1.0")
	held := fmt.Sprintf("1.1.0 held until %s (window incident-4711, which denies %s to %s)", end.Format(time.RFC3339), start.Format(time.RFC3339), end.Format(time.RFC3339))
	c := s.waitConfig(time.Minute, "1.1.0 held by the freeze", readyReason(v1alpha1.ReasonFrozen, held))
	if c.Status.Phase != v1alpha1.PhasePending || !c.Status.NextWindow.Time.Equal(end) {
		t.Errorf("under the freeze: %s, next window %v", describeConfig(c), c.Status.NextWindow)
	}
	s.waitEvent(10*time.Second, v1alpha1.EventVersionHeld, held)
	time.Sleep(3 * time.Second)
	if n := s.countEvents(v1alpha1.EventUpdateStarting); n != 0 || s.deploymentImage("app") != img("1.0.0") {
		t.Fatalf("a rollout started under the freeze: %d UpdateStarting events", n)
	}

	mustKubectl(t, "-n", s.ns, "patch", "ruc", "app", "--type=json", "-p", `[{"op":"remove","path":"/spec/windows"}]`)
	s.completed("1.1.0", 1, time.Minute)
}

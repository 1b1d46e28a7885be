//go:build e2e

package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"

	"github.com/rollgate/rollgate/api/v1alpha1"
)

// TestScenarioApprovalWithKubectl: a config with spec.approval Required holds an announced version
// until a person approves it, with kubectl alone: the config says what to run, an approval of
// another version does nothing, and the approval of the version starts it.
func TestScenarioApprovalWithKubectl(t *testing.T) {
	inNamespaceOnly(t)
	s := newScenario(t, "approval")
	s.create(deployment(s.ns, "app", img("1.0.0"), 2), appVersion("1.0.0"), config(func(c *v1alpha1.RollingUpgradeConfig) {
		c.Spec.Approval = v1alpha1.ApprovalRequired
	}))
	s.start()
	s.waitConfig(time.Minute, "the running version is recorded", func(c *v1alpha1.RollingUpgradeConfig) bool { return c.Status.CurrentVersion == "1.0.0" })

	s.announce("1.1.0")
	awaiting := func(also string) func(c *v1alpha1.RollingUpgradeConfig) bool {
		return func(c *v1alpha1.RollingUpgradeConfig) bool {
			r := apimeta.FindStatusCondition(c.Status.Conditions, meta.ReadyCondition)
			return c.Status.Phase == v1alpha1.PhasePending && c.Status.TargetVersion == "1.1.0" && r != nil &&
				r.Reason == v1alpha1.ReasonAwaitingApproval && strings.Contains(r.Message, also)
		}
	}
	c := s.waitConfig(time.Minute, "1.1.0 waits for its approval", awaiting("annotate ruc app rollgate.dev/approve=1.1.0 --overwrite"))
	s.waitEvent(10*time.Second, v1alpha1.EventApprovalRequired, "1.1.0 waits for approval")
	if get := mustKubectl(t, "-n", s.ns, "get", "ruc", "app"); !strings.Contains(get, "1.1.0") || !strings.Contains(get, "Pending") {
		t.Errorf("kubectl get ruc does not show 1.1.0 Pending:\n%s", get)
	}
	t.Logf("waiting: %s", describeConfig(c))

	// An approval of another version is named in the message, and approves nothing.
	mustKubectl(t, "-n", s.ns, "annotate", "ruc", "app", v1alpha1.ApproveAnnotation+"=1.0.9")
	s.waitConfig(30*time.Second, "the stale approval is named", awaiting("names 1.0.9, which approves no other version"))
	if got := s.deploymentImage("app"); got != img("1.0.0") || s.countEvents(v1alpha1.EventUpdateStarting) != 0 {
		t.Fatalf("a stale approval started the rollout: the workload runs %s", got)
	}

	mustKubectl(t, "-n", s.ns, "annotate", "ruc", "app", v1alpha1.ApproveAnnotation+"=1.1.0", "--overwrite")
	s.completed("1.1.0", 1, 2*time.Minute)
	s.waitEvent(10*time.Second, v1alpha1.EventUpdateStarting, "approved in "+v1alpha1.ApproveAnnotation)
	if n := s.countEvents(v1alpha1.EventApprovalRequired); n != 1 {
		t.Errorf("%d ApprovalRequired events, want 1", n)
	}
}

//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rollgate/rollgate/api/v1alpha1"
)

// An admission policy that pins images by digest, as Kyverno's verifyImages or sigstore's
// policy-controller do: every image of a Deployment in the namespace gains @sha256:…. Played with a
// MutatingAdmissionPolicy of the cluster's own API server, so no webhook server runs.
const pinDigestPolicy = `apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata:
  name: pin-digest-%[1]s
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: ["apps"]
      apiVersions: ["v1"]
      operations: ["CREATE", "UPDATE"]
      resources: ["deployments"]
  failurePolicy: Fail
  reinvocationPolicy: IfNeeded
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: >
        Object{spec: Object.spec{template: Object.spec.template{spec: Object.spec.template.spec{
          containers: object.spec.template.spec.containers.filter(c, !c.image.contains('@')).map(c,
            Object.spec.template.spec.containers{name: c.name, image: c.image + '@%[2]s'})}}}}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata:
  name: pin-digest-%[1]s
spec:
  policyName: pin-digest-%[1]s
  matchResources:
    namespaceSelector:
      matchLabels:
        kubernetes.io/metadata.name: %[1]s
`

// A healthy version whose image an admission policy pins by digest completes: it is not rolled back
// at the health timeout, put on the failed list, nor fought over by the renderer.
func TestScenarioDigestPinningAdmissionPolicy(t *testing.T) {
	inNamespaceOnly(t)
	s := newScenario(t, "digest")
	const digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	policy := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(policy, []byte(fmt.Sprintf(pinDigestPolicy, s.ns, digest)), 0o600); err != nil {
		t.Fatal(err)
	}
	mustKubectl(t, "apply", "-f", policy)
	t.Cleanup(func() { _, _ = kubectl(t, "delete", "--ignore-not-found", "-f", policy) })
	// The policy takes effect once the API server has loaded it: a Deployment created before might
	// keep its bare tag, so wait until a probe Deployment is pinned.
	eventually(t, time.Minute, "the admission policy pins images", func(ctx context.Context) (bool, string, error) {
		probe := deployment(s.ns, fmt.Sprintf("probe-%d", time.Now().UnixNano()), img("0.0.1"), 0)
		if err := k8s.Create(ctx, probe); err != nil {
			return false, err.Error(), nil
		}
		defer func() { _ = k8s.Delete(ctx, probe) }()
		got := probe.Spec.Template.Spec.Containers[0].Image
		return strings.HasSuffix(got, "@"+digest), "probe image " + got, nil
	})

	s.create(deployment(s.ns, "app", img("1.0.0"), 2), appVersion("1.0.0"), config())
	s.start()
	s.waitConfig(time.Minute, "the running version is recorded", func(c *v1alpha1.RollingUpgradeConfig) bool {
		return c.Status.CurrentVersion == "1.0.0"
	})

	s.announce("1.1.0")
	c := s.waitConfig(2*time.Minute, "1.1.0 completed or rolled back", func(c *v1alpha1.RollingUpgradeConfig) bool {
		return c.Status.CurrentVersion == "1.1.0" || len(c.Status.FailedVersions) > 0
	})
	if c.Status.CurrentVersion != "1.1.0" || len(c.Status.FailedVersions) != 0 || c.Status.Phase != v1alpha1.PhaseCompleted {
		t.Fatalf("a healthy pinned 1.1.0 was not completed: %s, failed %v", describeConfig(c), c.Status.FailedVersions)
	}
	if got, want := s.deploymentImage("app"), img("1.1.0")+"@"+digest; got != want {
		t.Errorf("workload runs %s, want %s", got, want)
	}
	// Let the renderer see the workload a few more times: it neither renders again nor counts a
	// revert, since the pinned image runs the target.
	time.Sleep(5 * time.Second)
	d := waitRolledOut(t, client.ObjectKey{Namespace: s.ns, Name: "app"}, time.Minute)
	if d.Annotations[v1alpha1.RevertsAnnotation] != "" {
		t.Errorf("the renderer counted reverts: %v", d.Annotations)
	}
	for reason, want := range map[string]int{"UpdateStarting": 1, "UpdateComplete": 1, "UpdateRollback": 0} {
		if n := s.countEvents(reason); n != want {
			t.Errorf("%d %s events, want %d", n, reason, want)
		}
	}
}

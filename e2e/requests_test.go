//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/rollgate/rollgate/api/v1alpha1"
)

// asNamespaceEditor makes user an editor of namespace ns with the cluster's aggregated edit role,
// into which the edit rules of config/rbac/user_roles.yaml are folded (under a name of the test's,
// so that an install's own copy may come and go meanwhile). It returns the kubectl flags that act
// as that user in ns.
func asNamespaceEditor(t *testing.T, ns, user string) []string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot, "config/rbac/user_roles.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var edit rbacv1.ClusterRole
	if err := yaml.Unmarshal([]byte(strings.Split(string(raw), "\n---\n")[0]), &edit); err != nil {
		t.Fatal(err)
	}
	if edit.Labels["rbac.authorization.k8s.io/aggregate-to-edit"] != "true" {
		t.Fatalf("the first role of user_roles.yaml is not the one folded into edit: %v", edit.Labels)
	}
	edit.Name = "rollgate-e2e-edit-" + ns
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "editor"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}}
	ctx := context.Background()
	if err := k8s.Create(ctx, &edit); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), &edit) })
	if err := k8s.Create(ctx, binding); err != nil {
		t.Fatal(err)
	}
	flags := []string{"--as", user, "-n", ns}
	// The aggregation controller folds the rules in shortly after.
	eventually(t, time.Minute, user+" may annotate configs", func(context.Context) (bool, string, error) {
		out, _ := kubectl(t, append(slices.Clone(flags), "auth", "can-i", "patch", "rollingupgradeconfigs.rollgate.dev")...)
		return strings.TrimSpace(out) == "yes", out, nil
	})
	return flags
}

// requesterPolicy applies config/admission as shipped, its binding narrowed to namespace ns so that
// the tests that run beside this one are not touched, and waits until the API server applies it.
func requesterPolicy(t *testing.T, ns string, probe []string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot, "config/admission/requester.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var docs []string
	for _, doc := range strings.Split(string(raw), "\n---\n") {
		var o unstructured.Unstructured
		if err := yaml.Unmarshal([]byte(doc), &o.Object); err != nil {
			t.Fatal(err)
		}
		o.SetName(o.GetName() + "-" + ns)
		if o.GetKind() == "MutatingAdmissionPolicyBinding" {
			_ = unstructured.SetNestedField(o.Object, o.GetName(), "spec", "policyName")
			_ = unstructured.SetNestedStringMap(o.Object, map[string]string{"kubernetes.io/metadata.name": ns},
				"spec", "matchResources", "namespaceSelector", "matchLabels")
		}
		out, err := yaml.Marshal(o.Object)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, string(out))
	}
	file := filepath.Join(t.TempDir(), "requester.yaml")
	if err := os.WriteFile(file, []byte(strings.Join(docs, "---\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	mustKubectl(t, "apply", "-f", file)
	t.Cleanup(func() { _, _ = kubectl(t, "delete", "--ignore-not-found", "-f", file) })
	user := probe[slices.Index(probe, "--as")+1]
	eventually(t, time.Minute, "the admission policy names who approves", func(context.Context) (bool, string, error) {
		if _, err := kubectl(t, append(slices.Clone(probe), "annotate", "--overwrite", "ruc", "app",
			v1alpha1.ApprovedByAnnotation+fmt.Sprintf("=probe-%d", time.Now().UnixNano()))...); err != nil {
			return false, err.Error(), nil
		}
		got, err := kubectl(t, append(slices.Clone(probe), "get", "ruc", "app", "-o", "jsonpath={.metadata.annotations.rollgate\\.dev/approved-by}")...)
		return got == user, got, err
	})
}

// TestScenarioApproveRejectRetryAsANamespaceEditor: a namespace editor (the aggregated edit role,
// by impersonation) approves, rejects and retries versions with kubectl annotate alone, as a Git
// repository would; the API server's admission policy (config/admission) names them, even over a
// name they write themselves, and the history records who did what.
func TestScenarioApproveRejectRetryAsANamespaceEditor(t *testing.T) {
	inNamespaceOnly(t)
	s := newScenario(t, "requests")
	const alice = "alice@example.com"
	editor := asNamespaceEditor(t, s.ns, alice)
	as := func(args ...string) string { return mustKubectl(t, append(slices.Clone(editor), args...)...) }
	s.create(deployment(s.ns, "app", img("1.0.0"), 2), appVersion("1.0.0"), config(func(c *v1alpha1.RollingUpgradeConfig) {
		c.Spec.Approval = v1alpha1.ApprovalRequired
	}))
	requesterPolicy(t, s.ns, editor)
	s.start()
	s.waitConfig(time.Minute, "the running version is recorded", func(c *v1alpha1.RollingUpgradeConfig) bool { return c.Status.CurrentVersion == "1.0.0" })
	newest := func(c *v1alpha1.RollingUpgradeConfig) v1alpha1.VersionHistoryEntry {
		if len(c.Status.VersionHistory) == 0 {
			return v1alpha1.VersionHistoryEntry{}
		}
		return c.Status.VersionHistory[len(c.Status.VersionHistory)-1]
	}
	waitsForApproval := func(v string) {
		s.waitConfig(time.Minute, v+" waits for its approval", func(c *v1alpha1.RollingUpgradeConfig) bool {
			return c.Status.Phase == v1alpha1.PhasePending && c.Status.TargetVersion == v && c.Status.Hold != nil && c.Status.Hold.Gate == v1alpha1.GateApproval
		})
	}

	// Approved by alice, who writes another name: the API server writes hers.
	s.announce("1.1.0")
	waitsForApproval("1.1.0")
	as("annotate", "--overwrite", "ruc", "app", v1alpha1.ApproveAnnotation+"=1.1.0", v1alpha1.ApprovedByAnnotation+"=mallory")
	c := s.completed("1.1.0", 1, 2*time.Minute)
	if got := c.Annotations[v1alpha1.ApprovedByAnnotation]; got != alice {
		t.Errorf("approved-by %q, want %s", got, alice)
	}
	if e := newest(c); e.Version != "1.1.0" || e.Status != v1alpha1.ResultHealthy || e.RequestedBy != alice {
		t.Errorf("history %+v, want 1.1.0 Healthy approved by %s", e, alice)
	}
	s.waitEvent(10*time.Second, v1alpha1.EventUpdateStarting, "approved in "+v1alpha1.ApproveAnnotation+" by "+alice)

	// Rejected before it rolls out: on the failed list, never started.
	s.announce("1.2.0")
	waitsForApproval("1.2.0")
	as("annotate", "ruc", "app", v1alpha1.RejectAnnotation+"=1.2.0", v1alpha1.RejectReasonAnnotation+"=breaks checkout")
	c = s.waitConfig(time.Minute, "1.2.0 is rejected", func(c *v1alpha1.RollingUpgradeConfig) bool {
		return slices.Contains(c.Status.FailedVersions, "1.2.0") && newest(c).Status == v1alpha1.ResultRejected
	})
	if e := newest(c); e.Version != "1.2.0" || e.RequestedBy != alice || e.Reason != "breaks checkout" || c.Status.Phase == v1alpha1.PhasePending {
		t.Errorf("after the rejection: %s, history %+v", describeConfig(c), e)
	}
	s.waitEvent(10*time.Second, v1alpha1.EventVersionRejected, "1.2.0 rejected by "+alice+" (breaks checkout)")

	// Retried (the rejection taken back in the same write), with a soak that keeps its rollout in
	// flight; approved; then rejected mid-check: rolled back, and on the failed list again.
	as("patch", "ruc", "app", "--type=merge", "-p", `{"spec":{"soakTime":"1h"}}`)
	as("annotate", "ruc", "app", v1alpha1.RejectAnnotation+"-", v1alpha1.RetryAnnotation+"=1.2.0")
	c = s.waitConfig(time.Minute, "1.2.0 is retried", func(c *v1alpha1.RollingUpgradeConfig) bool {
		return !slices.Contains(c.Status.FailedVersions, "1.2.0") && newest(c).Status == v1alpha1.ResultRetried
	})
	if e := newest(c); e.Version != "1.2.0" || e.RequestedBy != alice {
		t.Errorf("history %+v, want 1.2.0 Retried by %s", e, alice)
	}
	waitsForApproval("1.2.0")
	as("annotate", "--overwrite", "ruc", "app", v1alpha1.ApproveAnnotation+"=1.2.0")
	s.waitConfig(2*time.Minute, "1.2.0 soaks", func(c *v1alpha1.RollingUpgradeConfig) bool {
		return c.Status.Phase == v1alpha1.PhaseInProgress && c.Status.Hold != nil && c.Status.Hold.Gate == v1alpha1.GateSoak
	})
	as("annotate", "ruc", "app", v1alpha1.RetryAnnotation+"-", v1alpha1.RejectAnnotation+"=1.2.0")
	c = s.waitConfig(2*time.Minute, "1.2.0 is rolled back", func(c *v1alpha1.RollingUpgradeConfig) bool {
		return c.Status.Phase != v1alpha1.PhaseInProgress && c.Status.Phase != v1alpha1.PhaseRollingBack && slices.Contains(c.Status.FailedVersions, "1.2.0")
	})
	if got := s.deploymentImage("app"); got != img("1.1.0") || c.Status.CurrentVersion != "1.1.0" {
		t.Errorf("after the rejection mid-check: %s; the workload runs %s, want %s", describeConfig(c), got, img("1.1.0"))
	}
	for reason, want := range map[string]int{v1alpha1.EventVersionRejected: 2, v1alpha1.EventVersionRetried: 1, v1alpha1.EventRequestIgnored: 0} {
		if n := s.countEvents(reason); n != want {
			t.Errorf("%d %s events, want %d", n, reason, want)
		}
	}
	t.Logf("history: %+v", c.Status.VersionHistory)
}

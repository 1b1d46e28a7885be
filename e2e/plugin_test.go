//go:build e2e

package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rollgate/rollgate/api/v1alpha1"
)

// plugin runs kubectl-rollgate with args against the e2e cluster.
func plugin(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(pluginBin, append([]string{"--kubeconfig", kubeconfig}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err != nil {
		err = fmt.Errorf("kubectl-rollgate %s: %w\n%s", strings.Join(args, " "), err, out.String())
	}
	return out.String(), err
}

// pluginAs runs the plugin with a user's flags (asNamespaceEditor's) and args, logs what it said as
// a terminal would show it, and fails the test if it fails.
func pluginAs(t *testing.T, flags []string) func(args ...string) string {
	return func(args ...string) string {
		t.Helper()
		out, err := plugin(t, append(slices.Clone(flags), args...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("$ kubectl rollgate %s\n%s", strings.Join(args, " "), out)
		return out
	}
}

// TestKubectlRollgateAsANamespaceEditor: every command of the plugin, run as a namespace editor
// (the aggregated edit role, by impersonation) with no admission policy: it names its user from
// the API server's SelfSubjectReview. A version is held, approved, rolled out, rejected, retried,
// rejected again; the config is suspended, resumed and its circuit reset; and get, why and
// history tell each step.
func TestKubectlRollgateAsANamespaceEditor(t *testing.T) {
	inNamespaceOnly(t)
	s := newScenario(t, "plugin")
	const alice = "alice@example.com"
	editor := asNamespaceEditor(t, s.ns, alice)
	as := pluginAs(t, editor)
	says := func(out string, want ...string) {
		t.Helper()
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("the plugin says\n%s\nwithout %q", out, w)
			}
		}
	}
	s.create(deployment(s.ns, "app", img("1.0.0"), 2), appVersion("1.0.0"), config(func(c *v1alpha1.RollingUpgradeConfig) {
		c.Spec.Approval = v1alpha1.ApprovalRequired
	}))
	s.start()
	s.waitConfig(time.Minute, "the running version is recorded", func(c *v1alpha1.RollingUpgradeConfig) bool { return c.Status.CurrentVersion == "1.0.0" })

	says(as("version"), "kubectl-rollgate ")
	s.announce("1.1.0")
	s.waitConfig(time.Minute, "1.1.0 waits for its approval", func(c *v1alpha1.RollingUpgradeConfig) bool {
		return c.Status.Hold != nil && c.Status.Hold.Gate == v1alpha1.GateApproval && c.Status.Hold.Version == "1.1.0"
	})
	if row := regexp.MustCompile(`(?m)^app\s+True\s+AwaitingApproval\s+1\.0\.0\s+1\.1\.0\s+Approval for \S+\s+-$`); !row.MatchString(as("get")) {
		t.Errorf("get does not show app held by its approval")
	}
	says(as("why", "app"), "1.1.0 is held by the Approval gate, since ", "to let it go: kubectl rollgate -n "+s.ns+" approve app 1.1.0")

	says(as("approve", "app", "1.1.0"), "approved 1.1.0 for "+s.ns+"/app as "+alice)
	s.completed("1.1.0", 1, 2*time.Minute)

	s.announce("1.2.0")
	s.waitConfig(time.Minute, "1.2.0 waits for its approval", func(c *v1alpha1.RollingUpgradeConfig) bool {
		return c.Status.Hold != nil && c.Status.Hold.Version == "1.2.0"
	})
	says(as("reject", "app", "1.2.0", "--reason", "breaks checkout"), "rejected 1.2.0 for "+s.ns+"/app as "+alice)
	s.waitConfig(time.Minute, "1.2.0 is rejected", func(c *v1alpha1.RollingUpgradeConfig) bool { return slices.Contains(c.Status.FailedVersions, "1.2.0") })
	says(as("why", "app", "1.2.0"), "1.2.0 is on the failed list of "+s.ns+"/app and never rolls out again: rejected ", "by "+alice+" (breaks checkout)")

	says(as("retry", "app", "1.2.0"), "retried 1.2.0 for "+s.ns+"/app as "+alice)
	s.waitConfig(time.Minute, "1.2.0 waits for its approval again", func(c *v1alpha1.RollingUpgradeConfig) bool {
		return !slices.Contains(c.Status.FailedVersions, "1.2.0") && c.Status.Hold != nil && c.Status.Hold.Version == "1.2.0"
	})
	// Rejected again: the rejection the retry took back was acted on, so the plugin waits for the
	// manager to clear its record before it names the version again.
	says(as("reject", "app", "1.2.0"), "rejected 1.2.0")
	s.waitConfig(time.Minute, "1.2.0 is rejected again", func(c *v1alpha1.RollingUpgradeConfig) bool { return slices.Contains(c.Status.FailedVersions, "1.2.0") })

	says(as("suspend", "app"), "suspended "+s.ns+"/app")
	s.waitConfig(time.Minute, "the config is suspended", func(c *v1alpha1.RollingUpgradeConfig) bool { return c.Status.Phase == v1alpha1.PhaseSuspended })
	says(as("get", "app"), "Suspended")
	says(as("resume", "app"), "resumed "+s.ns+"/app")
	s.waitConfig(time.Minute, "the config is resumed", func(c *v1alpha1.RollingUpgradeConfig) bool { return c.Status.Phase != v1alpha1.PhaseSuspended })
	says(as("reset", "app"), "reset the circuit of "+s.ns+"/app")
	s.waitConfig(time.Minute, "the reset is acted on", func(c *v1alpha1.RollingUpgradeConfig) bool {
		return c.Status.LastCircuitReset != "" && c.Status.LastCircuitReset == c.Annotations[v1alpha1.ResetCircuitAnnotation]
	})

	history := as("history", "app")
	for _, row := range []string{`1\.1\.0\s+Healthy\s+` + alice, `1\.2\.0\s+Rejected\s+` + alice + `\s+breaks checkout`, `1\.2\.0\s+Retried\s+` + alice} {
		if !regexp.MustCompile(row).MatchString(history) {
			t.Errorf("history has no row %s", row)
		}
	}
	if n := strings.Count(history, "Rejected"); n != 2 {
		t.Errorf("history has %d rejections, want 2", n)
	}

	says(as("describe", "app"), "Name:      "+s.ns+"/app", "Workload:  Deployment app, app="+img("1.1.0")+", 2 of 2 pods ready",
		"Failed:    1.2.0", "Pods:", "History:", "Events:", "VersionRejected", "1.2.0 rejected by "+alice)

	// lint: the API server's schema and rules, by a dry run that stores nothing.
	file := filepath.Join(t.TempDir(), "configs.yaml")
	if err := os.WriteFile(file, []byte(`apiVersion: rollgate.dev/v1alpha1
kind: RollingUpgradeConfig
metadata: {name: linted}
spec: {targetRef: {kind: Deployment, name: app}, image: e2e.local/demo/app, sources: [{applicationVersion: {name: app}}]}
---
apiVersion: rollgate.dev/v1alpha1
kind: RollingUpgradeConfig
metadata: {name: refused}
spec: {targetRef: {kind: DaemonSet, name: app}, image: e2e.local/demo/app}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := plugin(t, append(slices.Clone(editor), "lint", file)...)
	t.Logf("$ kubectl rollgate lint configs.yaml\n%s", out)
	if err == nil {
		t.Error("lint passed a config the API server refuses")
	}
	says(out, "ok: RollingUpgradeConfig "+s.ns+"/linted", "error: RollingUpgradeConfig "+s.ns+"/refused: ", `Unsupported value: "DaemonSet"`)
	if _, err := plugin(t, "-n", s.ns, "get", "linted"); err == nil {
		t.Error("lint's dry run created the config")
	}

	// An editor of one namespace may not list them all; whoever may, sees the namespace.
	if out, err := plugin(t, append(slices.Clone(editor), "get", "-A")...); err == nil || !strings.Contains(out, "forbidden") {
		t.Errorf("get -A as a namespace editor: %v\n%s", err, out)
	}
	all, err := plugin(t, "get", "-A")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^NAMESPACE\s+NAME\s+READY`).MatchString(all) || !strings.Contains(all, s.ns) {
		t.Errorf("get -A does not list %s:\n%s", s.ns, all)
	}
}

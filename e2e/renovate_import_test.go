//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rollgate/rollgate/api/v1alpha1"
)

// renovateImport runs `rollgate renovate import` against the cluster.
func renovateImport(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(managerBin, append([]string{"renovate", "import", "--kubeconfig", kubeconfig}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("rollgate renovate import %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// A Renovate report announces 1.3.0 (and a major 2.0.0): the import moves the ApplicationVersion
// to 1.3.0, idempotently, and rollgate rolls it out.
func TestScenarioRenovateReportImport(t *testing.T) {
	inNamespaceOnly(t)
	s := newScenario(t, "import")
	s.create(deployment(s.ns, "app", img("1.0.0"), 2), appVersion("1.0.0"), config())
	report := filepath.Join(t.TempDir(), "report.json")
	body := fmt.Sprintf(`{"problems": [], "repositories": {"local": {"problems": [], "branches": [], "packageFiles": {"regex": [
		{"packageFile": "apps/app/appversion.yaml", "deps": [{"depName": %q, "currentValue": "1.0.0", "datasource": "docker",
		 "updates": [{"newValue": "1.3.0", "updateType": "minor"}, {"newValue": "2.0.0", "updateType": "major"}]}]}]}}}}`, appRepo)
	if err := os.WriteFile(report, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	avKey := client.ObjectKey{Namespace: s.ns, Name: "app"}
	version := func() (string, string) {
		var av v1alpha1.ApplicationVersion
		if err := k8s.Get(context.Background(), avKey, &av); err != nil {
			t.Fatal(err)
		}
		var managers []string
		for _, m := range av.ManagedFields {
			managers = append(managers, m.Manager)
		}
		return av.Spec.Version + " " + strings.Join(managers, ","), av.ResourceVersion
	}

	out := renovateImport(t, "--report", report, "--namespace", s.ns, "--dry-run")
	if !strings.Contains(out, "would apply: "+s.ns+"/app: ApplicationVersion app 1.0.0 -> 1.3.0") {
		t.Errorf("dry run said:\n%s", out)
	}
	if v, _ := version(); !strings.HasPrefix(v, "1.0.0 ") {
		t.Fatalf("the dry run changed the ApplicationVersion: %s", v)
	}

	out = renovateImport(t, "--report", report, "--namespace", s.ns)
	v, rv := version()
	if !strings.Contains(out, "applied: ") || !strings.HasPrefix(v, "1.3.0 ") || !slices.Contains(strings.Split(strings.Fields(v)[1], ","), "rollgate-renovate") {
		t.Fatalf("import said:\n%s\nApplicationVersion: %s", out, v)
	}
	out = renovateImport(t, "--report", report, "--namespace", s.ns)
	if _, rv2 := version(); rv2 != rv || !strings.Contains(out, "ok: ") {
		t.Errorf("second import changed something (resourceVersion %s -> %s):\n%s", rv, rv2, out)
	}

	s.start()
	c := s.waitPhase(2*time.Minute, v1alpha1.PhaseCompleted)
	if c.Status.CurrentVersion != "1.3.0" {
		t.Errorf("after the rollout: %s", describeConfig(c))
	}
}

//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// These tests apply what config/ ships to the real API server.

// installCRDs applies config/crd (idempotent) and waits until its CRDs are served.
func installCRDs(t *testing.T) {
	t.Helper()
	mustKubectl(t, "apply", "--server-side", "-k", "config/crd")
	// kubectl wait fails at once on a CRD the API server has not given conditions yet (one just
	// created, by this test or one running beside it): ask again until it waits.
	eventually(t, time.Minute, "the CRDs are established", func(context.Context) (bool, string, error) {
		out, err := kubectl(t, "wait", "--for=condition=Established", "--timeout=30s",
			"crd/rollingupgradeconfigs.rollgate.dev", "crd/applicationversions.rollgate.dev", "crd/gitwritebacks.rollgate.dev", "crd/rolloutcalendars.rollgate.dev")
		return err == nil, out, nil
	})
}

func TestCRDsInstallAndSamplesAreAccepted(t *testing.T) {
	installCRDs(t)

	ns := newNamespace(t, "samples")
	mustKubectl(t, "-n", ns, "apply", "--dry-run=server", "-k", "config/samples")
	mustKubectl(t, "-n", ns, "apply", "-k", "config/samples")

	// The category lists both kinds; the short names work.
	out := mustKubectl(t, "-n", ns, "get", "rollgate", "-o", "name")
	for _, want := range []string{"rollingupgradeconfig.rollgate.dev/web", "applicationversion.rollgate.dev/web"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl get rollgate does not list %s:\n%s", want, out)
		}
	}
	out = mustKubectl(t, "-n", ns, "get", "ruc,appver")
	for _, col := range []string{"TARGET", "CURRENT", "TARGET VERSION", "PHASE", "CIRCUIT", "NEXT WINDOW", "IMAGE", "VERSION"} {
		if !strings.Contains(out, col) {
			t.Errorf("kubectl get ruc,appver has no column %s:\n%s", col, out)
		}
	}
}

func TestInstallsPassServerDryRun(t *testing.T) {
	// Server-side dry run checks every object against the API server's schemas and admission, but
	// it cannot create the namespaces it would put them in; create those first.
	for _, ns := range []string{"rollgate-system", "team-a", "team-b"} {
		ensureNamespace(t, ns)
	}
	for _, in := range installs {
		out := mustKubectl(t, "apply", "-k", in.dir, "--dry-run=server")
		want := []string{
			"deployment.apps/rollgate-controller-manager",
			"service/rollgate-controller-manager-metrics",
			"customresourcedefinition.apiextensions.k8s.io/rollingupgradeconfigs.rollgate.dev",
			"clusterrole.rbac.authorization.k8s.io/rollgate-manager-role",
		}
		if in.namespaced {
			want[3] = "role.rbac.authorization.k8s.io/rollgate-manager-role"
			if strings.Contains(out, "clusterrole.rbac.authorization.k8s.io/rollgate-manager-role") {
				t.Errorf("%s: the namespaced install has the cluster-wide role:\n%s", in.dir, out)
			}
		}
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: dry run did not include %s:\n%s", in.dir, w, out)
			}
		}
	}
}

func TestPlainExamplePassesServerDryRun(t *testing.T) {
	installCRDs(t)
	// The example creates its own namespace "shop"; the dry run needs it to exist already.
	ensureNamespace(t, "shop")
	out := mustKubectl(t, "apply", "-k", "examples/plain", "--dry-run=server")
	for _, want := range []string{"deployment.apps/web", "applicationversion.rollgate.dev/web", "rollingupgradeconfig.rollgate.dev/web"} {
		if !strings.Contains(out, want) {
			t.Errorf("dry run did not include %s:\n%s", want, out)
		}
	}
}

// TestGitOpsExamplesPassServerDryRun checks examples/flux, examples/argocd and examples/gitfirst
// (which e2e/gitfirst_test.go also runs through Flux) against the real
// Flux and Argo CD CRDs (from their Go modules, see `make example-crds`). kubectl validates
// strictly, so a field the CRD does not know (say, a misspelt ignore rule) fails here.
func TestGitOpsExamplesPassServerDryRun(t *testing.T) {
	installCRDs(t)
	installExampleCRDs(t, "gitrepositories.source.toolkit.fluxcd.io", "kustomizations.kustomize.toolkit.fluxcd.io", "applications.argoproj.io")
	for _, ns := range []string{"flux-system", "argocd"} {
		ensureNamespace(t, ns)
	}
	shop := newNamespace(t, "shop")
	for _, f := range []string{"examples/flux/gitrepository.yaml", "examples/flux/kustomization.yaml",
		"examples/argocd/application.yaml", "examples/argocd/argocd-cm-health.yaml",
		"examples/gitfirst/flux.yaml", "examples/gitfirst/argocd.yaml"} {
		mustKubectl(t, "apply", "--dry-run=server", "-f", f)
	}
	for _, dir := range []string{"examples/flux/apps/shop", "examples/gitfirst/apps/shop"} {
		mustKubectl(t, "-n", shop, "apply", "--dry-run=server", "-k", dir)
	}

	// The same Kustomization with a misspelt field is refused: the check above is a real one.
	bad, err := os.ReadFile(filepath.Join(repoRoot, "examples/flux/kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	badFile := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(badFile, []byte(strings.Replace(string(bad), "  ignore:", "  ignores:", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := kubectl(t, "apply", "--dry-run=server", "-f", badFile); err == nil || !strings.Contains(out, "ignores") {
		t.Errorf("a misspelt field was accepted: %v\n%s", err, out)
	}
}

// TestMonitoringConfigPassesServerDryRun checks config/prometheus (ServiceMonitor and the
// PrometheusRule generated from rollgate.rules.yaml) against the prometheus-operator's CRDs.
func TestMonitoringConfigPassesServerDryRun(t *testing.T) {
	installExampleCRDs(t, "servicemonitors.monitoring.coreos.com", "prometheusrules.monitoring.coreos.com")
	ensureNamespace(t, "rollgate-system")
	out := mustKubectl(t, "apply", "-k", "config/prometheus", "--dry-run=server")
	for _, want := range []string{"servicemonitor.monitoring.coreos.com/rollgate-controller-manager-metrics",
		"prometheusrule.monitoring.coreos.com/rollgate-alerts"} {
		if !strings.Contains(out, want) {
			t.Errorf("dry run did not include %s:\n%s", want, out)
		}
	}
}

// installExampleCRDs applies the third-party CRDs `make example-crds` fetched and waits until the
// named ones are established.
func installExampleCRDs(t *testing.T, names ...string) {
	t.Helper()
	crds := os.Getenv("EXAMPLE_CRDS")
	if crds == "" {
		t.Fatal("EXAMPLE_CRDS is not set: run through `make test-e2e`")
	}
	mustKubectl(t, "apply", "--server-side", "-f", crds)
	args := []string{"wait", "--for=condition=Established", "--timeout=5s"}
	for _, n := range names {
		args = append(args, "crd/"+n)
	}
	// A CRD created a moment ago may have no status yet, which kubectl wait does not accept.
	eventually(t, time.Minute, "CRDs established", func(ctx context.Context) (bool, string, error) {
		out, err := kubectl(t, args...)
		return err == nil, out, nil
	})
}

// ensureNamespace creates a namespace the examples name, if it is not there, and leaves it: it is
// shared by tests and goes with the cluster.
func ensureNamespace(t *testing.T, name string) {
	t.Helper()
	if _, err := kubectl(t, "get", "namespace", name); err != nil {
		mustKubectl(t, "create", "namespace", name)
	}
}

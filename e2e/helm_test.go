//go:build e2e

package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/diff"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/rollgate/rollgate/api/v1alpha1"
)

const chartDir = "charts/rollgate"

func helm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(helmBin, append(args, "--kubeconfig", kubeconfig)...)
	cmd.Dir = repoRoot
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func mustHelm(t *testing.T, args ...string) string {
	t.Helper()
	out, err := helm(t, args...)
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// helmBookkeeping are the labels and annotations Helm's conventions add, which a kustomize install
// has no use for.
var helmBookkeeping = []string{"helm.sh/chart", "app.kubernetes.io/managed-by", "app.kubernetes.io/instance",
	"app.kubernetes.io/version", "helm.sh/resource-policy"}

// renderedObjects are the objects of a multi-document YAML stream by kind/namespace/name, without
// Helm's bookkeeping wherever labels are (metadata, selectors, pod templates) and without the
// Namespace object: Helm installs into the release's namespace and does not own it.
func renderedObjects(t *testing.T, stream string) map[string]map[string]any {
	t.Helper()
	objs := map[string]map[string]any{}
	for _, doc := range strings.Split(stream, "\n---") {
		var o map[string]any
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			t.Fatalf("%v in\n%.300s", err, doc)
		}
		if o == nil || o["kind"] == "Namespace" {
			continue
		}
		u := unstructured.Unstructured{Object: o}
		for _, path := range [][]string{{"metadata", "labels"}, {"metadata", "annotations"}, {"spec", "selector", "matchLabels"},
			{"spec", "selector"}, {"spec", "template", "metadata", "labels"}} {
			m, ok, _ := unstructured.NestedStringMap(o, path...)
			if !ok {
				continue
			}
			for _, k := range helmBookkeeping {
				delete(m, k)
			}
			if len(m) == 0 {
				unstructured.RemoveNestedField(o, path...)
			} else {
				_ = unstructured.SetNestedStringMap(o, m, path...)
			}
		}
		objs[u.GetKind()+" "+u.GetNamespace()+"/"+u.GetName()] = o
	}
	return objs
}

// sameObjects fails the test with the differences between what helm and kustomize render.
func sameObjects(t *testing.T, what string, helmOut, kustomizeOut string) {
	t.Helper()
	got, want := renderedObjects(t, helmOut), renderedObjects(t, kustomizeOut)
	var keys []string
	for k := range got {
		keys = append(keys, k)
	}
	for k := range want {
		if _, ok := got[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		switch g, w := got[k], want[k]; {
		case g == nil:
			t.Errorf("%s: helm does not render %s", what, k)
		case w == nil:
			t.Errorf("%s: helm renders %s, which kustomize does not", what, k)
		default:
			if d := diff.Diff(w, g); d != "" {
				t.Errorf("%s: %s differs (- kustomize, + helm):\n%s", what, k, d)
			}
		}
	}
}

// TestHelmChart: `helm lint` passes; with its defaults the chart renders what config/default does,
// and with namespaces set what config/namespaced does; with every option on, the API server takes
// all of it. TestRelease installs, upgrades and uninstalls a release's chart (helmLifecycle).
func TestHelmChart(t *testing.T) {
	for _, values := range [][]string{nil, {"--set", "namespaces={team-a,team-b}", "--set", "serviceMonitor.enabled=true",
		"--set", "prometheusRule.enabled=true", "--set", "dashboard.enabled=true"}} {
		mustHelm(t, append([]string{"lint", "--strict", chartDir}, values...)...)
	}
	sameObjects(t, "defaults", mustHelm(t, "template", "rollgate", chartDir, "--namespace", managerNamespace),
		mustKubectl(t, "kustomize", "config/default"))
	sameObjects(t, "namespaces={team-a,team-b}",
		mustHelm(t, "template", "rollgate", chartDir, "--namespace", managerNamespace, "--set", "namespaces={team-a,team-b}"),
		mustKubectl(t, "kustomize", "config/namespaced"))

	// A name prefix as long as fullnameOverride may give: every name the chart makes of it fits the
	// API's 63 characters.
	long := strings.Repeat("r", 60)
	for key, o := range renderedObjects(t, mustHelm(t, "template", "rollgate", chartDir, "--set", "fullnameOverride="+long,
		"--set", "serviceMonitor.enabled=true", "--set", "prometheusRule.enabled=true", "--set", "dashboard.enabled=true")) {
		if name := (&unstructured.Unstructured{Object: o}).GetName(); len(name) > 63 {
			t.Errorf("%s: a name of %d characters", key, len(name))
		}
	}

	// The notes' uninstall commands work in a shell whatever the selector: a set-based one has a '!'.
	// Only `helm install` renders the notes, and even with --dry-run=client it refuses objects the
	// cluster already holds: the CRDs are left out, every other name carries the release's.
	notes := mustHelm(t, "install", "notes", chartDir, "--dry-run=client", "--namespace", managerNamespace,
		"--set", "crds.install=false", "--set", "namespaces={team-a}", "--set", "watchLabelSelector=!sharding.rollgate.dev/key")
	if want := "kubectl delete rollingupgradeconfigs -n team-a -l '!sharding.rollgate.dev/key'"; !strings.Contains(notes, want) {
		t.Errorf("the notes do not say %s:\n%s", want, notes)
	}

	// The threshold of RollgateVersionHeldTooLong is the chart's to set.
	if rule := mustHelm(t, "template", "rollgate", chartDir, "--set", "prometheusRule.enabled=true",
		"--set", "prometheusRule.versionHeldForSeconds=86400", "--show-only", "templates/monitoring.yaml"); !strings.Contains(rule, "> 86400") ||
		strings.Contains(rule, "> 604800") {
		t.Errorf("prometheusRule.versionHeldForSeconds=86400 does not set RollgateVersionHeldTooLong's threshold:\n%s", rule)
	}

	// A release made before notifications existed and upgraded with --reuse-values has none of
	// their defaults (Helm drops the new chart's): the chart renders with only what is set.
	partial := filepath.Join(t.TempDir(), "partial.yaml")
	if err := os.WriteFile(partial, []byte("notifications:\n  eventsAddr: http://nc.flux-system./\n  webhook: null\n  queueSize: null\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if d := mustHelm(t, "template", "rollgate", chartDir, "-f", partial, "--show-only", "templates/deployment.yaml"); !strings.Contains(d, `"--events-addr=http://nc.flux-system./"`) ||
		strings.Contains(d, "--notify-") {
		t.Errorf("notifications without their defaults:\n%s", d)
	}

	installCRDs(t)
	// Every optional object, as the API server (with the prometheus-operator's CRDs) takes it.
	installExampleCRDs(t, "servicemonitors.monitoring.coreos.com", "prometheusrules.monitoring.coreos.com")
	ensureNamespace(t, managerNamespace)
	all := filepath.Join(t.TempDir(), "all.yaml")
	if err := os.WriteFile(all, []byte(mustHelm(t, "template", "rollgate", chartDir, "--namespace", managerNamespace,
		"--set", "serviceMonitor.enabled=true", "--set", "prometheusRule.enabled=true", "--set", "dashboard.enabled=true",
		"--set", "notifications.eventsAddr=http://notification-controller.flux-system.svc.cluster.local./",
		"--set", "notifications.webhook.secretName=rollgate-webhook", "--set", "notifications.queueSize=50",
		"--set", "receiver.secretName=rollgate-receivers", "--set", "registryCloudIdentity=true", "--set", `serviceAccountAnnotations.eks\.amazonaws\.com/role-arn=arn:aws:iam::123456789012:role/rollgate`,
		"--set", `podLabels.azure\.workload\.identity/use=true`, "--set", "extraEnv[0].name=AZURE_CLIENT_ID", "--set", "extraEnv[0].value=5e1a7c2b",
		// Values that YAML would take for a boolean or a number, were they not quoted.
		"--set", "goMemLimit=off", "--set", "extraArgs={on}")), 0o600); err != nil {
		t.Fatal(err)
	}
	out := mustKubectl(t, "apply", "--server-side", "--dry-run=server", "-f", all)
	for _, want := range []string{"servicemonitor.monitoring.coreos.com/rollgate-controller-manager-metrics",
		"prometheusrule.monitoring.coreos.com/rollgate-alerts", "configmap/rollgate-dashboard", "deployment.apps/rollgate-controller-manager",
		"service/rollgate-receiver"} {
		if !strings.Contains(out, want) {
			t.Errorf("the chart with every option does not apply %s:\n%s", want, out)
		}
	}
	if rendered, _ := os.ReadFile(all); !strings.Contains(string(rendered), "- --registry-cloud-identity") ||
		!strings.Contains(string(rendered), "- --receiver-addr=:9292") ||
		!strings.Contains(string(rendered), "eks.amazonaws.com/role-arn: arn:aws:iam::123456789012:role/rollgate") ||
		!strings.Contains(string(rendered), `azure.workload.identity/use: "true"`) || !strings.Contains(string(rendered), "- name: AZURE_CLIENT_ID\n          value: 5e1a7c2b") {
		t.Errorf("the cloud identity, its pod label or the receiver is not rendered:\n%s", rendered)
	}

}

// helmLifecycle installs chart (a release's, whose manager runs image) as a real release on the e2e
// control plane. It takes over the CRDs a `kubectl apply` put there; `helm upgrade` to the chart of
// this checkout with another image keeps a config's spec and status as they were; `helm uninstall`
// removes every object of the release but the CRDs, and with them the configs, so that nothing
// waits on a finalizer.
func helmLifecycle(t *testing.T, chart, image string) {
	t.Helper()
	installCRDs(t)
	ns := newNamespace(t, "helm")
	// The CRDs a kubectl apply installed become the release's, as a cluster moving to the chart
	// would make them.
	for _, crd := range []string{"rollingupgradeconfigs", "applicationversions", "gitwritebacks", "rolloutcalendars"} {
		name := "crd/" + crd + ".rollgate.dev"
		mustKubectl(t, "label", "--overwrite", name, "app.kubernetes.io/managed-by=Helm")
		mustKubectl(t, "annotate", "--overwrite", name, "meta.helm.sh/release-name=rollgate-helm", "meta.helm.sh/release-namespace="+ns)
	}
	mustHelm(t, "install", "rollgate-helm", chart, "--namespace", ns, "--wait", "--timeout", "2m")
	t.Cleanup(func() { _, _ = helm(t, "uninstall", "rollgate-helm", "--namespace", ns) })
	d := waitRolledOut(t, client.ObjectKey{Namespace: ns, Name: "rollgate-helm-controller-manager"}, time.Minute)
	if got := d.Spec.Template.Spec.Containers[0].Image; got != image {
		t.Errorf("the release's manager runs %s, want %s", got, image)
	}

	// A config with a status, as a manager leaves it.
	apps := newNamespace(t, "helm-apps")
	s := &scenario{t: t, ns: apps, name: "app"}
	s.create(deployment(apps, "app", img("1.0.0"), 1), appVersion("1.0.0"), config())
	s.start()
	before := s.waitConfig(time.Minute, "the running version is recorded", func(c *v1alpha1.RollingUpgradeConfig) bool {
		return c.Status.CurrentVersion == "1.0.0" && c.Status.ObservedGeneration == c.Generation
	})
	s.kill()

	mustHelm(t, "upgrade", "rollgate-helm", chartDir, "--namespace", ns, "--wait", "--timeout", "2m", "--set", "image.tag=v0.0.2")
	d = waitRolledOut(t, client.ObjectKey{Namespace: ns, Name: "rollgate-helm-controller-manager"}, time.Minute)
	if got := d.Spec.Template.Spec.Containers[0].Image; got != "ghcr.io/rollgate/rollgate:v0.0.2" {
		t.Errorf("after the upgrade the manager's image is %s", got)
	}
	after := s.config()
	if d := diff.Diff(before.Status, after.Status); d != "" || after.Generation != before.Generation {
		t.Errorf("the upgrade changed the config (generation %d to %d):\n%s", before.Generation, after.Generation, d)
	}

	// A manager deletes its configs before it goes (docs/install.md#uninstall).
	s.start()
	mustKubectl(t, "delete", "rollingupgradeconfigs", "--all", "-n", apps, "--timeout=1m")
	s.kill()
	out := mustHelm(t, "uninstall", "rollgate-helm", "--namespace", ns, "--wait", "--timeout", "1m")
	if !strings.Contains(out, "uninstalled") {
		t.Errorf("helm uninstall: %s", out)
	}
	left, err := kubectl(t, "get", "all,serviceaccounts,roles,rolebindings", "-n", ns, "-l", "app.kubernetes.io/instance=rollgate-helm", "-o", "name")
	if err != nil || strings.TrimSpace(left) != "" {
		t.Errorf("left in the release's namespace: %s %v", left, err)
	}
	for _, kind := range []string{"clusterroles", "clusterrolebindings"} {
		if out := mustKubectl(t, "get", kind, "-l", "app.kubernetes.io/instance=rollgate-helm", "-o", "name"); strings.TrimSpace(out) != "" {
			t.Errorf("left in the cluster: %s", out)
		}
	}
	// The CRDs stay (crds.keep), for a release installed again.
	for _, crd := range []string{"rollingupgradeconfigs", "rolloutcalendars"} {
		var u unstructured.Unstructured
		u.SetAPIVersion("apiextensions.k8s.io/v1")
		u.SetKind("CustomResourceDefinition")
		err := k8s.Get(context.Background(), client.ObjectKey{Name: crd + ".rollgate.dev"}, &u)
		if apierrors.IsNotFound(err) || u.GetDeletionTimestamp() != nil {
			t.Errorf("helm uninstall deleted the CRD %s", crd)
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if names := mustKubectl(t, "get", "namespace", ns, apps, "-o", "jsonpath={.items[*].status.phase}"); names != "Active Active" {
		t.Errorf("namespaces after the uninstall: %s", names)
	}
}

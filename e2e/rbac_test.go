//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/rollgate/rollgate/api/v1alpha1"
)

// The manager's identity in both installs.
const (
	managerNamespace = "rollgate-system"
	managerAccount   = "system:serviceaccount:" + managerNamespace + ":rollgate-controller-manager"
)

// install is one way to deploy rollgate, as the README and docs/operations.md describe it.
type install struct {
	name string
	dir  string
	// file is the install's manifest in a release (make release).
	file string
	// namespaced: the kustomization's example namespaces, which the test replaces with its own.
	namespaced bool
}

var installs = []install{
	{name: "cluster-wide", dir: "config/default", file: "install.yaml"},
	{name: "namespaced", dir: "config/namespaced", file: "install-namespaced.yaml", namespaced: true},
}

// applyRBAC applies the service account and every role and binding of a rendered install (not the
// manager's Deployment: the test runs the binary itself) and returns the manager's pod.
func applyRBAC(t *testing.T, in install, rendered, watched, other string) shippedPod {
	t.Helper()
	if in.namespaced {
		rendered = strings.NewReplacer("team-a", watched, "team-b", other).Replace(rendered)
	}
	var keep []string
	for _, doc := range strings.Split(rendered, "\n---\n") {
		var head struct {
			Kind string `json:"kind"`
		}
		if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
			t.Fatal(err)
		}
		switch head.Kind {
		case "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
			keep = append(keep, doc)
		}
	}
	file := filepath.Join(t.TempDir(), "rbac.yaml")
	if err := os.WriteFile(file, []byte(strings.Join(keep, "\n---\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	mustKubectl(t, "apply", "-f", file)
	t.Cleanup(func() { _, _ = kubectl(t, "delete", "--ignore-not-found", "--wait=false", "-f", file) })
	pod := podOf(t, rendered)
	// The namespaced install reads nothing cluster-scoped: no RolloutCalendars either.
	var scope []string
	for _, a := range pod.args {
		if strings.HasPrefix(a, "--namespace=") || strings.HasPrefix(a, "--calendars=") {
			scope = append(scope, a)
		}
	}
	if in.namespaced && !slices.Equal(scope, []string{"--namespace=" + watched + "," + other, "--calendars=false"}) {
		t.Fatalf("the namespaced install's manager flags are %v, want --namespace naming its Roles' namespaces and --calendars=false", scope)
	}
	return pod
}

// leastPrivilege: the manager ran as its ServiceAccount, with nothing but the RBAC its install
// ships, through rolloutsAsTheManager in watched, and RBAC denied it not one request. It returns
// what the API server says the account may do, row by row: in watched, and for the namespaced
// install also in kube-system, where it may do nothing but what rbacRows allow anywhere.
func leastPrivilege(t *testing.T, in install, m *manager, watched string) [][]string {
	t.Helper()
	if denied := rbacDenials(t, m); len(denied) > 0 {
		t.Errorf("the manager was denied %d requests by RBAC:\n%s", len(denied), strings.Join(denied, "\n"))
	}
	columns := [][]string{canI(t, watched)}
	if in.namespaced {
		elsewhere := canI(t, "kube-system")
		for i, allowed := range elsewhere {
			if allowed == "yes" && !rbacRows[i].anyNamespace {
				t.Errorf("the namespaced install may %s in kube-system", rbacRows[i])
			}
		}
		columns = append(columns, elsewhere)
	}
	return columns
}

// checkRBACTable: what the manager may do, as the API server answered it by install, is the table
// in docs/operations.md.
func checkRBACTable(t *testing.T, columns map[string][][]string) {
	t.Helper()
	var b strings.Builder
	b.WriteString("| the manager may | cluster-wide, any namespace | namespaced, a watched namespace | namespaced, elsewhere (kube-system) |\n|---|---|---|---|\n")
	for i, r := range rbacRows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", r, columns["cluster-wide"][0][i], columns["namespaced"][0][i], columns["namespaced"][1][i])
	}
	docs, err := os.ReadFile(filepath.Join(repoRoot, "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(docs), b.String()) {
		t.Errorf("docs/operations.md does not have the table the API server answers:\n%s", b.String())
	}
}

// rolloutsAsTheManager: a registry rollout read with pull secrets, a Deployment rollback and a
// StatefulSet rollback (which deletes its stuck pod), all at once in one namespace.
func rolloutsAsTheManager(t *testing.T, ns string) {
	t.Helper()
	host := startRegistry(t, "1.0.0", "1.1.0")
	repo := host + "/demo/app"
	neverReady(t, ns, img("1.1.0"))
	pull := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "pull", Namespace: ns}, Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{"` + host + `":{"auth":"dXNlcjpwYXNz"}}}`)}}
	web := deployment(ns, "web", repo+":1.0.0", 1)
	web.Spec.Template.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "pull"}}
	labels := map[string]string{"app": "db"}
	db := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To[int32](2), ServiceName: "db", PodManagementPolicy: appsv1.OrderedReadyPodManagement,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "db", Image: img("1.0.0")}}}},
		},
	}
	named := func(name string, kind v1alpha1.WorkloadKind, mods ...func(*v1alpha1.RollingUpgradeConfig)) *v1alpha1.RollingUpgradeConfig {
		return config(append([]func(*v1alpha1.RollingUpgradeConfig){func(c *v1alpha1.RollingUpgradeConfig) {
			c.Name, c.Namespace = name, ns
			c.Spec.TargetRef = v1alpha1.WorkloadReference{Kind: kind, Name: name}
			c.Spec.Sources[0].ApplicationVersion.Name = name
		}}, mods...)...)
	}
	version := func(name string) *v1alpha1.ApplicationVersion {
		av := appVersion("1.0.0")
		av.Name, av.Namespace = name, ns
		return av
	}
	for _, o := range []client.Object{pull, web, deployment(ns, "api", img("1.0.0"), 1), db, version("api"), version("db"),
		named("web", v1alpha1.KindDeployment, listedFrom(repo)),
		named("api", v1alpha1.KindDeployment), named("db", v1alpha1.KindStatefulSet)} {
		if err := k8s.Create(context.Background(), o); err != nil {
			t.Fatalf("creating %s: %v", o.GetName(), err)
		}
	}
	for _, name := range []string{"api", "db"} {
		waitNamed(t, ns, name, 2*time.Minute, "the running version is recorded", func(c *v1alpha1.RollingUpgradeConfig) bool { return c.Status.CurrentVersion == "1.0.0" })
		announceNamed(t, ns, name, "1.1.0")
	}
	waitNamed(t, ns, "web", 2*time.Minute, "1.1.0 rolled out", func(c *v1alpha1.RollingUpgradeConfig) bool {
		return c.Status.Phase == v1alpha1.PhaseCompleted && c.Status.CurrentVersion == "1.1.0"
	})
	for _, name := range []string{"api", "db"} {
		waitNamed(t, ns, name, 3*time.Minute, "1.1.0 rolled back", func(c *v1alpha1.RollingUpgradeConfig) bool {
			return c.Status.Phase == v1alpha1.PhaseIdle && c.Annotations[v1alpha1.UpdatePhaseAnnotation] == "" &&
				strings.Join(c.Status.FailedVersions, ",") == "1.1.0"
		})
	}
}

// rbacDenials are the manager's log lines that report a request RBAC denied ("User … cannot list
// resource …"): informers, reconcilers, the event sink and leader election all log theirs. Other
// answers 403 are not RBAC's: a cluster-wide manager also finishes the configs of namespaces that
// earlier tests left terminating, where no new event may be created.
func rbacDenials(t *testing.T, m *manager) []string {
	t.Helper()
	log, err := os.ReadFile(m.log)
	if err != nil {
		t.Fatal(err)
	}
	return regexp.MustCompile(`(?m)^.*cannot \w+ resource .*$`).FindAllString(string(log), -1)
}

// rbacRow is one thing the manager may or may not do; resources not named by a row are denied to it
// anyway, since no rule names them.
type rbacRow struct {
	verb, group, resource, subresource string
	// namespace, when set, is where the row is asked instead of the column's namespace.
	namespace string
	// anyNamespace: the namespaced install may do it outside the watched namespaces (its lease).
	anyNamespace bool
}

func (r rbacRow) String() string {
	s := "`" + r.verb + " " + r.resource
	if r.subresource != "" {
		s += "/" + r.subresource
	}
	if r.group != "" {
		s += "." + r.group
	}
	s += "`"
	if r.namespace != "" {
		s += " in " + r.namespace
	}
	return s
}

var rbacRows = []rbacRow{
	{verb: "watch", group: "rollgate.dev", resource: "rollingupgradeconfigs"},
	{verb: "patch", group: "rollgate.dev", resource: "rollingupgradeconfigs"},
	{verb: "update", group: "rollgate.dev", resource: "rollingupgradeconfigs"},
	{verb: "update", group: "rollgate.dev", resource: "rollingupgradeconfigs", subresource: "status"},
	{verb: "patch", group: "rollgate.dev", resource: "rollingupgradeconfigs", subresource: "status"},
	{verb: "delete", group: "rollgate.dev", resource: "rollingupgradeconfigs"},
	{verb: "watch", group: "rollgate.dev", resource: "applicationversions"},
	{verb: "update", group: "rollgate.dev", resource: "applicationversions", subresource: "status"},
	{verb: "update", group: "rollgate.dev", resource: "applicationversions"},
	{verb: "watch", group: "rollgate.dev", resource: "gitwritebacks"},
	{verb: "update", group: "rollgate.dev", resource: "gitwritebacks"},
	{verb: "patch", group: "rollgate.dev", resource: "gitwritebacks", subresource: "status"},
	{verb: "watch", group: "rollgate.dev", resource: "rolloutcalendars"},
	{verb: "update", group: "rollgate.dev", resource: "rolloutcalendars"},
	{verb: "update", group: "rollgate.dev", resource: "rolloutcalendars", subresource: "status"},
	{verb: "get", resource: "namespaces"},
	{verb: "update", resource: "namespaces"},
	{verb: "watch", group: "apps", resource: "deployments"},
	{verb: "patch", group: "apps", resource: "deployments"},
	{verb: "patch", group: "apps", resource: "statefulsets"},
	{verb: "delete", group: "apps", resource: "deployments"},
	{verb: "create", group: "apps", resource: "deployments"},
	{verb: "list", resource: "pods"},
	{verb: "delete", resource: "pods"},
	{verb: "patch", resource: "pods"},
	{verb: "patch", resource: "pods", subresource: "status"},
	{verb: "watch", resource: "pods"},
	{verb: "create", resource: "pods"},
	{verb: "get", resource: "secrets"},
	{verb: "list", resource: "secrets"},
	{verb: "get", resource: "serviceaccounts"},
	{verb: "create", resource: "serviceaccounts", subresource: "token"},
	{verb: "watch", resource: "configmaps"},
	{verb: "update", resource: "configmaps"},
	{verb: "create", group: "events.k8s.io", resource: "events"},
	{verb: "update", group: "coordination.k8s.io", resource: "leases", namespace: managerNamespace, anyNamespace: true},
	{verb: "update", group: "coordination.k8s.io", resource: "leases"},
}

// canI asks the API server, row by row, whether the manager's service account may do it in ns.
func canI(t *testing.T, ns string) []string {
	t.Helper()
	out := make([]string, len(rbacRows))
	for i, r := range rbacRows {
		where := ns
		if r.namespace != "" {
			where = r.namespace
		}
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:   managerAccount,
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + managerNamespace, "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: where, Verb: r.verb, Group: r.group,
				Resource: r.resource, Subresource: r.subresource},
		}}
		if err := k8s.Create(context.Background(), sar); err != nil {
			t.Fatal(err)
		}
		out[i] = map[bool]string{true: "yes", false: "no"}[sar.Status.Allowed]
	}
	return out
}

//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/gitwrite/gittest"
)

// TestScenarioGitFirstThroughFlux: Git says what runs. The repository holds examples/gitfirst as it
// is (a Deployment, its ApplicationVersion, a GitWriteBack and a RollingUpgradeConfig in the
// GitFirst mode) and an overlay for this cluster; Flux's kustomize-controller applies it, with no
// ignore rule. A version announced by a commit (Renovate's merged pull request) is rolled out by
// rollgate's commit to the images: entry and reaches the Deployment through Flux; a never-Ready
// version goes the same way and is rolled back by another commit; the namespace deleted and synced
// again from Git comes back on the last healthy version, knowing the failed one.
func TestScenarioGitFirstThroughFlux(t *testing.T) {
	inNamespaceOnly(t)
	installExampleCRDs(t, "gitrepositories.source.toolkit.fluxcd.io", "ocirepositories.source.toolkit.fluxcd.io",
		"buckets.source.toolkit.fluxcd.io", "kustomizations.kustomize.toolkit.fluxcd.io")
	const (
		example = "examples/gitfirst/apps/shop/"
		web     = "ghcr.io/acme/web"
	)
	s := newScenario(t, "gitfirst")
	s.name = "web" // the example's
	fluxNS := newNamespace(t, "gitfirst-flux")
	git := gittest.New(t)
	files := map[string]string{}
	entries, err := os.ReadDir(filepath.Join(repoRoot, example))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(repoRoot, example, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[example+e.Name()] = string(b)
	}
	// This cluster's overlay: its namespace (so that a sync recreates it), the Git server, short
	// timeouts and no window.
	files["clusters/e2e/namespace.yaml"] = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: " + s.ns + "\n"
	files["clusters/e2e/kustomization.yaml"] = `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: ` + s.ns + `
resources:
- namespace.yaml
- ../../examples/gitfirst/apps/shop
patches:
- target: {kind: GitWriteBack, name: fleet}
  patch: |
    - {op: replace, path: /spec/url, value: "` + git.URL + `/fleet.git"}
- target: {kind: RollingUpgradeConfig, name: web}
  patch: |
    - {op: remove, path: /spec/maintenanceWindow}
    - {op: replace, path: /spec/healthTimeout, value: 30s}
    - {op: replace, path: /spec/gitWriteBack/applyTimeout, value: 2m}
`
	url := git.Repo(t, "fleet", files)
	bare := git.Bare("fleet")
	kustomization := func(tag string) string {
		return strings.Replace(files[example+"kustomization.yaml"], "newTag: 1.3.0", "newTag: "+tag, 1)
	}
	secret := func() *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: "shop-git"},
			StringData: map[string]string{"username": git.User, "password": git.Password}}
	}
	create(t, secret())

	startFluxSource(t, bare, url, fluxNS, "fleet")
	flux := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
		"metadata": map[string]any{"namespace": fluxNS, "name": "shop"},
		"spec": map[string]any{"interval": "30s", "path": "./clusters/e2e", "prune": true,
			"sourceRef": map[string]any{"kind": "GitRepository", "name": "fleet"}},
	}}
	create(t, flux)
	startKustomizeController(t, fluxNS)
	s.start("--git-allow", "127.0.0.1")

	image := func() string {
		var d appsv1.Deployment
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: s.ns, Name: "web"}, &d); err != nil {
			return err.Error()
		}
		return d.Spec.Template.Spec.Containers[0].Image
	}
	runs := func(tag string) {
		t.Helper()
		eventually(t, 2*time.Minute, "the Deployment on "+tag, func(context.Context) (bool, string, error) {
			got := image()
			return got == web+":"+tag, got, nil
		})
	}
	written := func(what string, cond func(*v1alpha1.RollingUpgradeConfig) bool) *v1alpha1.RollingUpgradeConfig {
		t.Helper()
		return waitWritten(t, s.ns, "web", what, cond)
	}
	record := ".rollgate/" + s.ns + "/web.yaml"
	runs("1.3.0")
	written("the first record written", func(c *v1alpha1.RollingUpgradeConfig) bool { return c.Status.CurrentVersion == "1.3.0" })
	waitInGit(t, bare, record, hasAll("currentVersion: 1.3.0"))

	// A good version: Renovate's merged pull request bumps the ApplicationVersion; rollgate's commit
	// rolls it out; Flux brings it to the Deployment, where nobody but Flux owns the image.
	gitCommit(t, bare, "Update ghcr.io/acme/web to 1.4.0", func(dir string) {
		replaceIn(t, dir, example+"applicationversion.yaml", "version: 1.3.0", "version: 1.4.0")
	})
	runs("1.4.0")
	written("1.4.0 passed", func(c *v1alpha1.RollingUpgradeConfig) bool {
		return c.Status.CurrentVersion == "1.4.0" && c.Status.Phase == v1alpha1.PhaseCompleted
	})
	waitInGit(t, bare, example+"kustomization.yaml", isText(kustomization("1.4.0")))
	waitInGit(t, bare, record, hasAll("currentVersion: 1.4.0"))
	if owners := imageOwners(t, s.ns, "web"); !slices.Equal(owners, []string{"kustomize-controller"}) {
		t.Errorf("the image of the web container is owned by %v; want kustomize-controller alone", owners)
	}
	fluxSynced(t, fluxNS, "shop", gitHead(t, bare))
	if got := image(); got != web+":1.4.0" {
		t.Errorf("after a Flux sync with no ignore rule the Deployment runs %s", got)
	}

	// A never-Ready version goes out the same way and is rolled back by a commit.
	neverReady(t, s.ns, web+":1.5.0")
	gitCommit(t, bare, "Update ghcr.io/acme/web to 1.5.0", func(dir string) {
		replaceIn(t, dir, example+"applicationversion.yaml", "version: 1.4.0", "version: 1.5.0")
	})
	runs("1.5.0")
	c := written("1.5.0 rolled back", func(c *v1alpha1.RollingUpgradeConfig) bool {
		return c.Status.Phase == v1alpha1.PhaseIdle && slices.Contains(c.Status.FailedVersions, "1.5.0")
	})
	runs("1.4.0")
	waitInGit(t, bare, example+"kustomization.yaml", isText(kustomization("1.4.0")))
	waitInGit(t, bare, record, hasAll("currentVersion: 1.4.0", "- 1.5.0"))
	waitInGit(t, bare, ".rollgate/renovate.json", hasAll(`1\\.5\\.0`))
	log := gittest.Git(t, "", "--git-dir", bare, "log", "--format=%an: %s", "main")
	for _, want := range []string{"rollgate: rollgate: " + s.ns + "/web: rolling out 1.5.0", "1.5.0 failed its health check; back on 1.4.0"} {
		if !strings.Contains(log, want) {
			t.Errorf("no commit says %q:\n%s", want, log)
		}
	}
	if n := len(c.Status.VersionHistory); n == 0 || c.Status.VersionHistory[n-1].Status != v1alpha1.ResultRolledBack {
		t.Errorf("history: %+v", c.Status.VersionHistory)
	}

	// A person reverts rollgate's rollback commit, and Flux brings the failed 1.5.0 back: rollgate
	// says so and rolls it back again, by a commit of its own that puts 1.4.0 back in the file.
	rollback := strings.TrimSpace(gittest.Git(t, "", "--git-dir", bare, "log", "-1", "--format=%H", "--grep", "back on 1.4.0", "main"))
	gitCommit(t, bare, "Revert rollgate's rollback", func(dir string) { gittest.Git(t, dir, "revert", "--no-commit", rollback) })
	// Within the apply timeout of rollgate's last write the tool may be on its way: it waits that long first.
	s.waitEvent(4*time.Minute, v1alpha1.EventFailedVersionFromGit, "runs "+web+":1.5.0, which failed before, from Git")
	runs("1.4.0")
	waitInGit(t, bare, example+"kustomization.yaml", isText(kustomization("1.4.0")))
	again := written("1.5.0 rolled back again", func(c *v1alpha1.RollingUpgradeConfig) bool {
		return c.Status.Phase == v1alpha1.PhaseIdle && c.Status.RollbackCount == 2
	})
	if ready := apimeta.FindStatusCondition(again.Status.Conditions, meta.ReadyCondition); ready == nil || ready.Status != metav1.ConditionTrue ||
		again.Status.CurrentVersion != "1.4.0" || image() != web+":1.4.0" {
		t.Errorf("after the revert was undone: current %s, Ready %+v", again.Status.CurrentVersion, ready)
	}
	if n := s.countEvents(v1alpha1.EventFailedVersionFromGit); n != 1 {
		t.Errorf("%d %s events for one revert", n, v1alpha1.EventFailedVersionFromGit)
	}

	// The namespace is lost and synced again from Git, where 1.5.0 is still announced: the
	// config reads its record, comes back on 1.4.0 and does not try 1.5.0.
	if err := k8s.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.ns}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 3*time.Minute, "the namespace gone", func(ctx context.Context) (bool, string, error) {
		err := k8s.Get(ctx, client.ObjectKey{Name: s.ns}, &corev1.Namespace{})
		return apierrors.IsNotFound(err), "still there", nil
	})
	requestFluxSync(t, fluxNS, "shop")
	eventually(t, 2*time.Minute, "the Secret restored", func(ctx context.Context) (bool, string, error) {
		err := k8s.Create(ctx, secret())
		return err == nil || apierrors.IsAlreadyExists(err), "namespace not back yet", nil
	})
	rebuilt := written("the record read again", func(c *v1alpha1.RollingUpgradeConfig) bool {
		return c.Status.CurrentVersion == "1.4.0" && slices.Contains(c.Status.FailedVersions, "1.5.0")
	})
	runs("1.4.0")
	// The write-back records what it read; the engine then decides on it, in a write of its own.
	settled := s.waitConfig(30*time.Second, "up to date on the record", func(c *v1alpha1.RollingUpgradeConfig) bool {
		ready := apimeta.FindStatusCondition(c.Status.Conditions, meta.ReadyCondition)
		return ready != nil && ready.Reason != v1alpha1.ReasonAwaitingGitRecord
	})
	if ready := apimeta.FindStatusCondition(settled.Status.Conditions, meta.ReadyCondition); ready.Reason != v1alpha1.ReasonUpToDate {
		t.Errorf("Ready after the rebuild: %+v", ready)
	}
	time.Sleep(5 * time.Second) // room for a wrong start
	if n := s.countEvents(v1alpha1.EventUpdateStarting); n != 0 || image() != web+":1.4.0" {
		t.Errorf("the rebuilt config started a rollout (%d starts): %s", n, describeConfig(rebuilt))
	}
}

// imageOwners are the field managers that own the image of the first container of Deployment name.
func imageOwners(t *testing.T, ns, name string) []string {
	t.Helper()
	var d appsv1.Deployment
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &d); err != nil {
		t.Fatal(err)
	}
	container := `"k:{\"name\":\"` + d.Spec.Template.Spec.Containers[0].Name + `\"}"`
	var owners []string
	for _, e := range d.ManagedFields {
		if raw := string(e.FieldsV1.GetRawBytes()); strings.Contains(raw, container) && strings.Contains(raw[strings.Index(raw, container):], `"f:image"`) {
			owners = append(owners, e.Manager)
		}
	}
	return owners
}

// gitHead is the commit main points at.
func gitHead(t *testing.T, bare string) string {
	t.Helper()
	return strings.TrimSpace(gittest.Git(t, "", "--git-dir", bare, "rev-parse", "main"))
}

// fluxSynced asks kustomize-controller for a sync and waits until it has applied the commit.
func fluxSynced(t *testing.T, ns, name, commit string) {
	t.Helper()
	token := requestFluxSync(t, ns, name)
	eventually(t, 2*time.Minute, "Flux synced "+commit, func(ctx context.Context) (bool, string, error) {
		k := &unstructured.Unstructured{}
		k.SetAPIVersion("kustomize.toolkit.fluxcd.io/v1")
		k.SetKind("Kustomization")
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, k); err != nil {
			return false, err.Error(), nil
		}
		handled, _, _ := unstructured.NestedString(k.Object, "status", "lastHandledReconcileAt")
		applied, _, _ := unstructured.NestedString(k.Object, "status", "lastAppliedRevision")
		return handled == token && strings.HasSuffix(applied, commit), "handled " + handled + ", applied " + applied, nil
	})
}

//go:build e2e

package e2e

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/gitwrite/gittest"
	"github.com/rollgate/rollgate/internal/renovate"
)

// TestScenarioWriteBackTeachesRenovate: a config writes its outcomes into a repository of a real Git
// server (git http-backend, basic auth). A good version lands in the kustomization's images: entry,
// every other byte kept; a never-Ready version is rolled back and lands in the config's record and
// in the Renovate preset, and the real Renovate, run over a checkout whose config extends that
// preset, offers it before the rollback and no longer after. The config applied again with an empty
// status, as in a rebuilt cluster, starts nothing until it has read its record, and then knows the
// failed version.
func TestScenarioWriteBackTeachesRenovate(t *testing.T) {
	inNamespaceOnly(t)
	host := startRegistry(t, "1.0.0", "1.1.0", "1.2.0")
	repo := host + "/demo/app"
	git := gittest.New(t)
	kustomization := func(tag string) string {
		return `# shop, as the GitOps tool applies it
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
images:
  # rollgate writes the tag that passed its health check
  - name: ` + repo + `
    newTag: "` + tag + `"   # quoted, as a person wrote it
`
	}
	url := git.Repo(t, "fleet", map[string]string{"shop/kustomization.yaml": kustomization("1.0.0")})
	bare := git.Bare("fleet")
	show := func(path string) string { return gitShow(bare, path) }
	inGit := func(path string, holds func(string) bool) { t.Helper(); waitInGit(t, bare, path, holds) }

	s := newScenario(t, "writeback")
	neverReady(t, s.ns, repo+":1.2.0")
	ruc := func() *v1alpha1.RollingUpgradeConfig {
		return config(func(c *v1alpha1.RollingUpgradeConfig) {
			c.Spec.Image = repo
			c.Spec.GitWriteBack = &v1alpha1.GitWriteBackReference{Name: "fleet", Path: "shop/kustomization.yaml"}
		})
	}
	s.create(
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "fleet-git"},
			StringData: map[string]string{"username": git.User, "password": git.Password}},
		&v1alpha1.GitWriteBack{ObjectMeta: metav1.ObjectMeta{Name: "fleet"},
			Spec: v1alpha1.GitWriteBackSpec{URL: url, SecretRef: &meta.LocalObjectReference{Name: "fleet-git"}}},
		deployment(s.ns, "app", repo+":1.0.0", 2),
		&v1alpha1.ApplicationVersion{ObjectMeta: metav1.ObjectMeta{Name: "app"}, Spec: v1alpha1.ApplicationVersionSpec{Image: repo, Version: "1.0.0"}},
		ruc(),
	)
	s.start("--git-allow", "127.0.0.1")
	record := ".rollgate/" + s.ns + "/app.yaml"
	written := func(what string, cond func(*v1alpha1.RollingUpgradeConfig) bool) *v1alpha1.RollingUpgradeConfig {
		return waitWritten(t, s.ns, "app", what, cond)
	}
	written("the first record written", func(c *v1alpha1.RollingUpgradeConfig) bool { return c.Status.CurrentVersion == "1.0.0" })
	inGit(record, hasAll("currentVersion: 1.0.0"))

	// A good version passes: the kustomization says so, and nothing else in it changed.
	s.announce("1.1.0")
	written("1.1.0 passed and written", func(c *v1alpha1.RollingUpgradeConfig) bool {
		return c.Status.CurrentVersion == "1.1.0" && c.Status.Phase == v1alpha1.PhaseCompleted
	})
	inGit("shop/kustomization.yaml", isText(kustomization("1.1.0")))
	before := renovateOffers(t, git, host, repo)
	if !slices.Contains(before, "1.2.0") {
		t.Fatalf("before any failure Renovate offers %v, want 1.2.0 among them", before)
	}

	// A never-Ready version is rolled back; Git learns it failed, and Renovate stops offering it.
	s.announce("1.2.0")
	written("1.2.0 rolled back and written", func(c *v1alpha1.RollingUpgradeConfig) bool {
		return c.Status.RollbackCount == 1 && c.Status.Phase == v1alpha1.PhaseIdle && slices.Contains(c.Status.FailedVersions, "1.2.0")
	})
	inGit(record, hasAll("currentVersion: 1.1.0", "- 1.2.0"))
	inGit(".rollgate/renovate.json", hasAll(`1\\.2\\.0`))
	if got := show("shop/kustomization.yaml"); got != kustomization("1.1.0") {
		t.Errorf("kustomization after the rollback:\n%s", got)
	}
	if after := renovateOffers(t, git, host, repo); slices.Contains(after, "1.2.0") {
		t.Errorf("after the rollback Renovate still offers %v", after)
	}
	log := gittest.Git(t, "", "--git-dir", git.Bare("fleet"), "log", "--format=%an <%ae>: %s", "main")
	if !strings.Contains(log, "rollgate <rollgate@rollgate.dev>: ") || !strings.Contains(log, "1.2.0 failed its health check") {
		t.Errorf("commits:\n%s", log)
	}

	// The cluster rebuilt: the config is applied again with an empty status while 1.2.0 is still
	// announced. It waits for its record, learns 1.2.0 failed, and does not try it.
	starts := s.countEvents(v1alpha1.EventUpdateStarting)
	if err := k8s.Delete(context.Background(), s.config()); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "the config gone", func(ctx context.Context) (bool, string, error) {
		err := k8s.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: "app"}, &v1alpha1.RollingUpgradeConfig{})
		return client.IgnoreNotFound(err) == nil && err != nil, "still there", nil
	})
	s.create(ruc())
	c := written("the record read again", func(c *v1alpha1.RollingUpgradeConfig) bool {
		return c.Status.CurrentVersion == "1.1.0" && slices.Contains(c.Status.FailedVersions, "1.2.0")
	})
	time.Sleep(3 * time.Second) // room for a wrong start
	if n := s.countEvents(v1alpha1.EventUpdateStarting); n != starts || s.deploymentImage("app") != repo+":1.1.0" {
		t.Errorf("the rebuilt config started a rollout (%d starts, %d before): %s", n, starts, describeConfig(s.config()))
	}
	if ready := apimeta.FindStatusCondition(s.config().Status.Conditions, meta.ReadyCondition); ready == nil || ready.Reason != v1alpha1.ReasonUpToDate {
		t.Errorf("Ready after the record was read: %+v (%s)", ready, describeConfig(c))
	}
}

// gitShow is a file on main of a bare repository, "" while there is none.
func gitShow(bare, path string) string {
	out, _ := exec.Command("git", "--git-dir", bare, "show", "main:"+path).Output()
	return string(out)
}

// waitInGit waits until the file on main holds what it should (a config's GitWriteBack condition
// can say True for the write before while the next one is under way).
func waitInGit(t *testing.T, bare, path string, holds func(string) bool) {
	t.Helper()
	eventually(t, time.Minute, path+" on main", func(context.Context) (bool, string, error) {
		got := gitShow(bare, path)
		return holds(got), got, nil
	})
}

func hasAll(parts ...string) func(string) bool {
	return func(s string) bool {
		for _, p := range parts {
			if !strings.Contains(s, p) {
				return false
			}
		}
		return true
	}
}

func isText(want string) func(string) bool { return func(s string) bool { return s == want } }

// waitWritten waits until cond holds for the config and its status, as it stands, is written to
// Git (condition GitWriteBack True for its generation).
func waitWritten(t *testing.T, ns, name, what string, cond func(*v1alpha1.RollingUpgradeConfig) bool) *v1alpha1.RollingUpgradeConfig {
	t.Helper()
	return waitNamed(t, ns, name, 2*time.Minute, what, func(c *v1alpha1.RollingUpgradeConfig) bool {
		w := apimeta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionGitWriteBack)
		return cond(c) && c.Status.GitWriteBack != nil && w != nil && w.Status == metav1.ConditionTrue && w.ObservedGeneration == c.Generation
	})
}

// renovateOffers clones the repository, extends the preset rollgate keeps there (served over HTTP:
// Renovate's local platform cannot read presets from a repository) and returns the
// versions the real Renovate proposes for image in the kustomization.
func renovateOffers(t *testing.T, git *gittest.Server, registryHost, image string) []string {
	t.Helper()
	checkout := t.TempDir()
	gittest.Git(t, "", "clone", "--quiet", git.Bare("fleet"), checkout)
	presets := httptest.NewServer(http.FileServer(http.Dir(checkout)))
	defer presets.Close()
	writeJSON(t, filepath.Join(checkout, "renovate.json"), map[string]any{
		"extends": []string{presets.URL + "/.rollgate/renovate.json"},
	})
	// Renovate reads a Git checkout's committed files: uncommitted, the config would not count.
	gittest.Git(t, checkout, "add", "renovate.json")
	gittest.Git(t, checkout, "commit", "--quiet", "-m", "Renovate extends rollgate's preset")
	rep, _ := runRenovate(t, checkout, registryHost, map[string]any{"matchHost": presets.URL, "enabled": true, "allowInternal": true})
	return offered(rep, "kustomize", "shop/kustomization.yaml", image)
}

// offered lists the new values Renovate proposes for image in file, through manager.
func offered(rep *renovate.Report, manager, file, image string) []string {
	var out []string
	for _, d := range rep.Dependencies() {
		if d.Manager == manager && d.PackageFile == file && d.DepName == image {
			for _, u := range d.Updates {
				out = append(out, u.NewValue)
			}
		}
	}
	return out
}

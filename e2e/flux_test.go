//go:build e2e

package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rollgate/rollgate/internal/gitwrite/gittest"
)

// Flux's kustomize-controller, built by `make flux-tools`, is the GitOps tool of these tests. Flux's
// source-controller does not build from the module proxy here, so fluxSource plays it: it serves
// each new head of the repository as the tarball source-controller would store, and writes the
// GitRepository's status.artifact that kustomize-controller reads.

var gitRepositoryKind = schema.GroupVersionKind{Group: "source.toolkit.fluxcd.io", Version: "v1", Kind: "GitRepository"}

// fluxSource serves the branch main of a bare repository as the artifact of GitRepository name.
type fluxSource struct {
	t         *testing.T
	bare      string
	ns, name  string
	srv       *httptest.Server
	mu        sync.Mutex
	tarballs  map[string][]byte // by file name, <commit>.tar.gz
	published string            // the commit of the artifact last written
}

// startFluxSource creates the GitRepository (its spec says where the repository is; nothing reads
// it) and publishes main's head whenever it moves, until the test ends.
func startFluxSource(t *testing.T, bare, url, ns, name string) *fluxSource {
	t.Helper()
	s := &fluxSource{t: t, bare: bare, ns: ns, name: name, tarballs: map[string][]byte{}}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		b, ok := s.tarballs[filepath.Base(r.URL.Path)]
		s.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(b)
	}))
	t.Cleanup(s.srv.Close)
	repo := &unstructured.Unstructured{}
	repo.SetGroupVersionKind(gitRepositoryKind)
	repo.SetNamespace(ns)
	repo.SetName(name)
	repo.Object["spec"] = map[string]any{"url": url, "interval": "1m", "ref": map[string]any{"branch": "main"}}
	if err := k8s.Create(context.Background(), repo); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		for {
			if err := s.publish(ctx); err != nil && ctx.Err() == nil {
				t.Logf("publishing the Git source: %v", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(500 * time.Millisecond):
			}
		}
	}()
	return s
}

// publish writes main's head as the artifact, if it moved.
func (s *fluxSource) publish(ctx context.Context) error {
	out, err := exec.CommandContext(ctx, "git", "--git-dir", s.bare, "rev-parse", "main").Output()
	if err != nil {
		return err
	}
	head := strings.TrimSpace(string(out))
	if head == s.published {
		return nil
	}
	tarball, err := exec.CommandContext(ctx, "git", "--git-dir", s.bare, "archive", "--format=tar.gz", head).Output()
	if err != nil {
		return err
	}
	file := head + ".tar.gz"
	s.mu.Lock()
	s.tarballs[file] = tarball
	s.mu.Unlock()
	sum := sha256.Sum256(tarball)
	now := time.Now().UTC().Format(time.RFC3339)
	revision := "main@sha1:" + head
	status := map[string]any{"status": map[string]any{
		"observedGeneration": 1,
		"artifact": map[string]any{
			"path": "gitrepository/" + s.ns + "/" + s.name + "/" + file, "url": s.srv.URL + "/" + file,
			"revision": revision, "digest": "sha256:" + hex.EncodeToString(sum[:]), "lastUpdateTime": now, "size": len(tarball),
		},
		"conditions": []map[string]any{{"type": "Ready", "status": "True", "reason": "Succeeded", "observedGeneration": 1,
			"message": "stored artifact for revision '" + revision + "'", "lastTransitionTime": now}},
	}}
	patch, err := json.Marshal(status)
	if err != nil {
		return err
	}
	repo := &unstructured.Unstructured{}
	repo.SetGroupVersionKind(gitRepositoryKind)
	repo.SetNamespace(s.ns)
	repo.SetName(s.name)
	if err := k8s.Status().Patch(ctx, repo, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return err
	}
	s.published = head
	return nil
}

// startKustomizeController runs Flux's kustomize-controller for the Kustomizations of namespace ns
// until the test ends.
func startKustomizeController(t *testing.T, ns string) {
	t.Helper()
	bin := os.Getenv("KUSTOMIZE_CONTROLLER")
	if bin == "" {
		t.Fatal("KUSTOMIZE_CONTROLLER is not set: run through `make test-e2e`")
	}
	cmd := exec.Command(bin, "--watch-all-namespaces=false", "--metrics-addr=0", "--health-addr="+freeAddr(t),
		"--no-remote-bases=true", "--log-level=debug")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "RUNTIME_NAMESPACE="+ns)
	runProcess(t, "kustomize-controller", cmd)
}

// gitCommit changes files on main of a bare repository, as a person's merged pull request would,
// and pushes; a push that finds main moved (rollgate wrote meanwhile) is made again on the new head.
func gitCommit(t *testing.T, bare, message string, edit func(dir string)) {
	t.Helper()
	for attempt := 0; ; attempt++ {
		work := t.TempDir()
		gittest.Git(t, "", "clone", "--quiet", "--branch", "main", bare, work)
		edit(work)
		gittest.Git(t, work, "add", "-A")
		gittest.Git(t, work, "commit", "--quiet", "-m", message)
		cmd := exec.Command("git", "push", "--quiet", "origin", "main")
		cmd.Dir = work
		if out, err := cmd.CombinedOutput(); err == nil {
			return
		} else if attempt == 5 {
			t.Fatalf("git push: %v\n%s", err, out)
		}
	}
}

// writeFiles writes files under dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for path, content := range files {
		p := filepath.Join(dir, path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// replaceIn replaces old with new in the file at path under dir, which must hold it.
func replaceIn(t *testing.T, dir, path, old, new string) {
	t.Helper()
	p := filepath.Join(dir, path)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), old) {
		t.Fatalf("%s does not hold %q:\n%s", path, old, b)
	}
	writeFiles(t, dir, map[string]string{path: strings.Replace(string(b), old, new, 1)})
}

// requestFluxSync asks kustomize-controller to apply the Kustomization now, as `flux reconcile`
// does, and returns the token it answers with in status.lastHandledReconcileAt.
func requestFluxSync(t *testing.T, ns, name string) string {
	t.Helper()
	token := fmt.Sprint(time.Now().UnixNano())
	mustKubectl(t, "-n", ns, "annotate", "--overwrite", "kustomizations.kustomize.toolkit.fluxcd.io/"+name,
		"reconcile.fluxcd.io/requestedAt="+token)
	return token
}

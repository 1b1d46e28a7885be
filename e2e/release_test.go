//go:build e2e

package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestReleaseArtefacts: `make release` (of one platform, to keep the cold path lean) writes the
// artefacts a release publishes, each in checksums.txt; both installs pin the manager's image by
// the digest of the image it built, never :latest, and the API server accepts them whole.
func TestReleaseArtefacts(t *testing.T) {
	installCRDs(t)
	ensureNamespace(t, managerNamespace)
	tmp := t.TempDir()
	dist, images := filepath.Join(tmp, "dist"), filepath.Join(tmp, "image")
	cmd := exec.Command("make", "-s", "-C", repoRoot, "release", "VERSION=v0.0.0-e2e", "IMAGE_PLATFORMS=linux/amd64",
		"DIST="+dist, "IMAGE_DIR="+images)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make release: %v\n%s", err, out)
	}
	index, err := os.ReadFile(filepath.Join(images, "layout", "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(index)
	pinned := "image: ghcr.io/rollgate/rollgate:v0.0.0-e2e@sha256:" + hex.EncodeToString(sum[:])
	for _, f := range []string{"install.yaml", "install-namespaced.yaml"} {
		b, err := os.ReadFile(filepath.Join(dist, f))
		if err != nil {
			t.Fatal(err)
		}
		if s := string(b); !strings.Contains(s, pinned) || strings.Contains(s, ":latest") {
			t.Errorf("%s does not pin the image it built (%s)", f, pinned)
		}
	}
	sums, err := os.ReadFile(filepath.Join(dist, "checksums.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"install.yaml", "install-namespaced.yaml", "rollgate-image.oci.tar", "rollgate-dashboard.json",
		"rollgate-prometheusrule.yaml", "release-notes.md"} {
		if !strings.Contains(string(sums), "  "+f+"\n") {
			t.Errorf("checksums.txt has no %s:\n%s", f, sums)
		}
	}
	check := exec.Command("sha256sum", "-c", "checksums.txt")
	check.Dir = dist
	if out, err := check.CombinedOutput(); err != nil {
		t.Errorf("sha256sum -c: %v\n%s", err, out)
	}
	if notes, _ := os.ReadFile(filepath.Join(dist, "release-notes.md")); !strings.HasPrefix(string(notes), "# rollgate v0.0.0-e2e\n") ||
		!strings.Contains(string(notes), "sha256:"+hex.EncodeToString(sum[:])) {
		t.Errorf("release notes:\n%.500s", notes)
	}
	mustKubectl(t, "apply", "--dry-run=server", "-f", filepath.Join(dist, "install.yaml"))
}

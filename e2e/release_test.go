//go:build e2e

package e2e

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// hostPlatform is the one platform TestRelease builds: the machine's, whose binary it runs.
const hostPlatform = "linux/" + runtime.GOARCH

// TestRelease: `make release` (of one platform, to keep the cold path lean) writes the artefacts a
// release publishes, each in checksums.txt; both installs pin the manager's image by the digest of
// the image it built, never :latest. `make image-push` puts that image into a registry, from which
// it is pulled back and its binary run as each install's pod would run it, with nothing but the
// install's RBAC: a rollout and two rollbacks complete, RBAC denies it nothing, and what it may do
// is the table of docs/operations.md. The image is signed, its SBOM attached as a signed
// attestation, and cosign verifies both with the release's key and with no other. The release's
// Helm chart installs, upgrades and uninstalls (helmLifecycle).
func TestRelease(t *testing.T) {
	installCRDs(t)
	ensureNamespace(t, managerNamespace)
	const version = "v0.0.0-e2e"
	tmp := t.TempDir()
	dist, images := filepath.Join(tmp, "dist"), filepath.Join(tmp, "image")
	mk := func(args ...string) {
		t.Helper()
		cmd := exec.Command("make", append([]string{"-s", "-C", repoRoot, "VERSION=" + version, "IMAGE_PLATFORMS=" + hostPlatform, "PLUGIN_PLATFORMS=" + hostPlatform,
			"DIST=" + dist, "IMAGE_DIR=" + images}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("make %v: %v\n%s", args, err, out)
		}
	}
	// A key of the test's own signs what it pushes, as a release's key would.
	keys := filepath.Join(tmp, "keys")
	if err := os.Mkdir(keys, 0o700); err != nil {
		t.Fatal(err)
	}
	// cosign runs cosign in dir; its output is stdout, then stderr.
	cosign := func(dir string, args ...string) (string, error) {
		cmd := exec.Command(cosignBin, args...)
		var stdout, stderr strings.Builder
		cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, append(os.Environ(), "COSIGN_PASSWORD=e2e"), &stdout, &stderr
		err := cmd.Run()
		return stdout.String() + stderr.String(), err
	}
	for _, dir := range []string{keys, tmp} { // the second pair is another key, which must not verify
		if out, err := cosign(dir, "generate-key-pair"); err != nil {
			t.Fatalf("cosign generate-key-pair: %v\n%s", err, out)
		}
	}
	t.Setenv("COSIGN_PASSWORD", "e2e")
	key := "COSIGN_KEY=" + filepath.Join(keys, "cosign.key")
	// An SBOM an earlier build of another platform left behind is no part of this release.
	stale := filepath.Join(images, "linux-s390x", "sbom.cdx.json")
	if err := os.MkdirAll(filepath.Dir(stale), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(stale, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	mk("release", key)
	sbom := "rollgate-sbom-" + strings.ReplaceAll(hostPlatform, "/", "-") + ".cdx.json"
	index, err := os.ReadFile(filepath.Join(images, "layout", "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(index)
	digest := "sha256:" + hex.EncodeToString(sum[:])

	t.Run("artefacts", func(t *testing.T) {
		pinned := "image: ghcr.io/rollgate/rollgate:" + version + "@" + digest
		rendered := map[string]string{"the chart": mustHelm(t, "template", "rollgate", filepath.Join(dist, "rollgate-0.0.0-e2e.tgz"))}
		for _, in := range installs {
			b, err := os.ReadFile(filepath.Join(dist, in.file))
			if err != nil {
				t.Fatal(err)
			}
			rendered[in.file] = string(b)
		}
		for what, s := range rendered {
			if !strings.Contains(s, pinned) || strings.Contains(s, ":latest") {
				t.Errorf("%s does not pin the image it built (%s)", what, pinned)
			}
		}
		sums, err := os.ReadFile(filepath.Join(dist, "checksums.txt"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"install.yaml", "install-namespaced.yaml", "rollgate-image.oci.tar", "rollgate-dashboard.json",
			"rollgate-prometheusrule.yaml", "release-notes.md", sbom, "cosign.pub", "rollgate-0.0.0-e2e.tgz",
			"kubectl-rollgate-" + strings.ReplaceAll(hostPlatform, "/", "-") + ".tar.gz", "rollgate.krew.yaml"} {
			if !strings.Contains(string(sums), "  "+f+"\n") {
				t.Errorf("checksums.txt has no %s:\n%s", f, sums)
			}
		}
		if hostPlatform != "linux/s390x" && strings.Contains(string(sums), "linux-s390x") {
			t.Errorf("checksums.txt lists the SBOM of a platform the release does not hold:\n%s", sums)
		}
		// The key and the signature are for everyone to read, as every other artefact is.
		for _, f := range []string{"cosign.pub", "checksums.txt.sig"} {
			fi, err := os.Stat(filepath.Join(dist, f))
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm()&0o004 == 0 {
				t.Errorf("%s has mode %v; want it readable by all", f, fi.Mode())
			}
		}
		check := exec.Command("sha256sum", "-c", "checksums.txt")
		check.Dir = dist
		if out, err := check.CombinedOutput(); err != nil {
			t.Errorf("sha256sum -c: %v\n%s", err, out)
		}
		if notes, _ := os.ReadFile(filepath.Join(dist, "release-notes.md")); !strings.HasPrefix(string(notes), "# rollgate "+version+"\n") ||
			!strings.Contains(string(notes), digest) {
			t.Errorf("release notes:\n%.500s", notes)
		}
		mustKubectl(t, "apply", "--dry-run=server", "-f", filepath.Join(dist, "install.yaml"))
		checkSBOM(t, filepath.Join(dist, sbom), version)
		checkKrewManifest(t, dist, version)
	})

	// The image, pushed and pulled back: what the release names by digest is what arrives.
	ref := startRegistry(t) + "/rollgate/rollgate:" + version
	mk("image-push", "IMG="+ref, key)
	byDigest := ref[:strings.LastIndex(ref, ":")] + "@" + digest

	t.Run("signed", func(t *testing.T) {
		checksums := filepath.Join(dist, "checksums.txt")
		for _, verify := range [][]string{{"verify"}, {"verify-attestation", "--type", "cyclonedx"},
			{"verify-blob", "--signature", checksums + ".sig"}} {
			subject := byDigest
			if verify[0] == "verify-blob" {
				subject = checksums
			}
			args := append(verify, "--key", filepath.Join(dist, "cosign.pub"), "--insecure-ignore-tlog", subject)
			out, err := cosign(tmp, args...)
			if err != nil {
				t.Errorf("cosign %v: %v\n%s", verify, err, out)
			} else if verify[0] == "verify-attestation" {
				checkAttestedSBOM(t, out, version)
			}
			args[len(verify)+1] = filepath.Join(tmp, "cosign.pub")
			if out, err := cosign(tmp, args...); err == nil {
				t.Errorf("cosign %v accepts another key:\n%s", verify, out)
			}
		}
	})

	binDir, err := os.MkdirTemp("", "rollgate-image-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(binDir) })
	if err := os.Chmod(binDir, 0o755); err != nil { //nolint:gosec // the image's user runs the binary from here
		t.Fatal(err)
	}
	bin := pulledBinary(t, byDigest, version, binDir)
	if out, err := exec.Command(bin, "version").CombinedOutput(); err != nil || !strings.HasPrefix(string(out), "rollgate "+version) {
		t.Fatalf("the image's binary says %q (%v), want rollgate %s", out, err, version)
	}

	t.Run("helm", func(t *testing.T) {
		helmLifecycle(t, filepath.Join(dist, "rollgate-0.0.0-e2e.tgz"), "ghcr.io/rollgate/rollgate:"+version+"@"+digest)
	})

	columns := map[string][][]string{}
	for _, in := range installs {
		t.Run("pod/"+in.name, func(t *testing.T) {
			rendered, err := os.ReadFile(filepath.Join(dist, in.file))
			if err != nil {
				t.Fatal(err)
			}
			watched, other := newNamespace(t, "pod"), newNamespace(t, "pod-other")
			pod := applyRBAC(t, in, string(rendered), watched, other)
			m := runAsPod(t, bin, pod, allowLoopbackRegistries)
			rolloutsAsTheManager(t, watched)
			columns[in.name] = leastPrivilege(t, in, m, watched)
			m.stop(t, pod.grace)
		})
	}
	if !t.Failed() {
		checkRBACTable(t, columns)
	}
}

// checkSBOM: the SBOM is CycloneDX of the rollgate binary of this version, and lists the modules
// built into it at the versions go.mod requires (controller-runtime stands for them all).
func checkSBOM(t *testing.T, file, version string) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var bom struct {
		BOMFormat string `json:"bomFormat"`
		Metadata  struct {
			Component struct{ Name, Version string } `json:"component"`
		} `json:"metadata"`
		Components []struct{ Name, Version string } `json:"components"`
	}
	if err := json.Unmarshal(b, &bom); err != nil {
		t.Fatal(err)
	}
	mod, err := os.ReadFile(filepath.Join(repoRoot, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	want := regexp.MustCompile(`(?m)^\s*sigs\.k8s\.io/controller-runtime (v\S+)`).FindSubmatch(mod)
	if want == nil {
		t.Fatal("go.mod requires no controller-runtime")
	}
	found := false
	for _, c := range bom.Components {
		found = found || c.Name == "sigs.k8s.io/controller-runtime" && c.Version == string(want[1])
	}
	if bom.BOMFormat != "CycloneDX" || bom.Metadata.Component.Name != "github.com/rollgate/rollgate" ||
		bom.Metadata.Component.Version != version || !found || len(bom.Components) < 50 {
		t.Errorf("the SBOM is %s of %+v with %d components (controller-runtime %s listed: %v)",
			bom.BOMFormat, bom.Metadata.Component, len(bom.Components), want[1], found)
	}
}

// checkAttestedSBOM: what verify-attestation printed (one DSSE envelope a line, before its
// warnings) holds an in-toto statement of a CycloneDX SBOM of this version's binary.
func checkAttestedSBOM(t *testing.T, out, version string) {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		var envelope struct{ PayloadType, Payload string }
		if json.Unmarshal([]byte(line), &envelope) != nil || envelope.Payload == "" {
			continue
		}
		payload, err := base64.StdEncoding.DecodeString(envelope.Payload)
		if err != nil {
			t.Fatal(err)
		}
		var statement struct {
			PredicateType string `json:"predicateType"`
			Predicate     struct {
				Metadata struct {
					Component struct{ Name, Version string } `json:"component"`
				} `json:"metadata"`
			} `json:"predicate"`
		}
		if err := json.Unmarshal(payload, &statement); err != nil {
			t.Fatal(err)
		}
		if c := statement.Predicate.Metadata.Component; statement.PredicateType != "https://cyclonedx.org/bom" ||
			c.Name != "github.com/rollgate/rollgate" || c.Version != version {
			t.Errorf("the attestation is a %s of %+v", statement.PredicateType, c)
		}
		return
	}
	t.Errorf("cosign verify-attestation printed no attestation:\n%s", out)
}

// checkKrewManifest holds the release's krew manifest to what krew requires of one (its
// apiVersion and kind, the plugin's name, a semver version with a leading v, a short description,
// platforms each with a selector, an https URI, the archive's sha256 and a bin among its files),
// and runs the plugin of the host's platform out of the archive it names: it says the release's
// version.
func checkKrewManifest(t *testing.T, dist, version string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dist, "rollgate.krew.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name string `json:"name"`
		} `json:"metadata"`
		Spec struct {
			Version          string `json:"version"`
			Homepage         string `json:"homepage"`
			ShortDescription string `json:"shortDescription"`
			Description      string `json:"description"`
			Platforms        []struct {
				Selector struct {
					MatchLabels map[string]string `json:"matchLabels"`
				} `json:"selector"`
				URI    string `json:"uri"`
				SHA256 string `json:"sha256"`
				Bin    string `json:"bin"`
				Files  []struct {
					From string `json:"from"`
					To   string `json:"to"`
				} `json:"files"`
			} `json:"platforms"`
		} `json:"spec"`
	}
	if err := yaml.UnmarshalStrict(raw, &m); err != nil {
		t.Fatalf("rollgate.krew.yaml: %v", err)
	}
	if m.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" || m.Kind != "Plugin" || m.Metadata.Name != "rollgate" ||
		m.Spec.Version != version || m.Spec.ShortDescription == "" || len(m.Spec.Platforms) != 1 {
		t.Fatalf("rollgate.krew.yaml:\n%s", raw)
	}
	p := m.Spec.Platforms[0]
	goos, goarch, _ := strings.Cut(hostPlatform, "/")
	archive := "kubectl-rollgate-" + goos + "-" + goarch + ".tar.gz"
	data, err := os.ReadFile(filepath.Join(dist, archive))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	if p.Selector.MatchLabels["os"] != goos || p.Selector.MatchLabels["arch"] != goarch || p.SHA256 != hex.EncodeToString(sum[:]) ||
		p.URI != "https://github.com/rollgate/rollgate/releases/download/"+version+"/"+archive || p.Bin != "kubectl-rollgate" ||
		len(p.Files) != 2 || p.Files[0].From != "kubectl-rollgate" || p.Files[1].From != "LICENSE" {
		t.Errorf("the platform of rollgate.krew.yaml does not name %s as krew needs:\n%s", archive, raw)
	}
	dir := t.TempDir()
	if out, err := exec.Command("tar", "-xzf", filepath.Join(dist, archive), "-C", dir).CombinedOutput(); err != nil {
		t.Fatalf("tar: %v\n%s", err, out)
	}
	out, err := exec.Command(filepath.Join(dir, p.Bin), "version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "kubectl-rollgate "+version+" ") {
		t.Errorf("the plugin of %s says %q (%v), want its version %s", archive, out, err, version)
	}
	if _, err := os.ReadFile(filepath.Join(dir, "LICENSE")); err != nil {
		t.Errorf("%s holds no LICENSE: %v", archive, err)
	}
}

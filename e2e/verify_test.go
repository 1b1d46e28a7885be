//go:build e2e

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/registry/registrytest"
	"github.com/rollgate/rollgate/internal/signature/sigstoretest"
)

// TestScenarioOnlySignedVersionsRollOut: a config verifies cosign signatures with the team's key.
// The registry on 127.0.0.1 holds 1.1.0, signed by real cosign with another key: it waits
// Unsigned, with one Warning, and is never rendered. Once the team's key signs it, it rolls out,
// pinned by the digest that was verified.
func TestScenarioOnlySignedVersionsRollOut(t *testing.T) {
	inNamespaceOnly(t)
	s := newScenario(t, "verify")
	host := startRegistry(t, "1.0.0")
	digest := registrytest.Push(t, host, "demo/app", "1.1.0")
	repo := host + "/demo/app"
	tmp := t.TempDir()
	team, other := filepath.Join(tmp, "team"), filepath.Join(tmp, "other")
	for _, dir := range []string{team, other} {
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		runCosign(t, dir, "generate-key-pair")
	}
	sign := func(keyDir string) {
		runCosign(t, keyDir, "sign", "--key", "cosign.key", "--tlog-upload=false", "--allow-http-registry", "--allow-insecure-registry", "-y",
			repo+"@"+digest)
	}
	sign(other)
	pub, err := os.ReadFile(filepath.Join(team, "cosign.pub"))
	if err != nil {
		t.Fatal(err)
	}
	s.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cosign"}, Data: map[string][]byte{"cosign.pub": pub}},
		deployment(s.ns, "app", repo+":1.0.0", 2), config(listedFrom(repo), func(c *v1alpha1.RollingUpgradeConfig) {
			c.Spec.Verify = &v1alpha1.Verify{Cosign: &v1alpha1.CosignVerify{PublicKeySecretRef: &v1alpha1.SecretKeyReference{Name: "cosign"}}}
		}))
	s.start(allowLoopbackRegistries)
	heldUntilSigned(s, repo, digest, "none of its cosign signatures is by the key", func() { sign(team) })
	// The Warning says why, and the same each time: the hold does not flap. (Two reconciles at
	// the manager's start may each announce it once.)
	var warnings []string
	for _, e := range s.events() {
		if e.Reason == v1alpha1.ReasonUnsigned {
			warnings = append(warnings, e.Message)
		}
	}
	if len(warnings) == 0 || len(warnings) > 2 || warnings[0] != warnings[len(warnings)-1] ||
		!strings.Contains(warnings[0], "is not signed by the key in Secret cosign (cosign.pub): none of its cosign signatures is by the key") {
		t.Errorf("Unsigned events %q, want one (or two at the start) saying why", warnings)
	}
}

// TestScenarioOnlyVersionsSignedByTheIdentityRollOut: a config verifies keyless cosign signatures:
// a certificate for the team's release workflow, from a CA of the trusted root in a ConfigMap,
// recorded by a transparency log of that root. The test is that Sigstore instance (a CA and a
// log of its own, offline); real cosign verifies each signature it makes, so they are cosign's.
// 1.1.0, signed by another workflow, waits Unsigned and is never rendered; once the team's
// workflow signs it too, it rolls out, pinned by the digest that was verified.
func TestScenarioOnlyVersionsSignedByTheIdentityRollOut(t *testing.T) {
	inNamespaceOnly(t)
	s := newScenario(t, "keyless")
	host := startRegistry(t, "1.0.0")
	digest := registrytest.Push(t, host, "demo/app", "1.1.0")
	repo := host + "/demo/app"
	const issuer = "https://token.actions.githubusercontent.com"
	const team, other = "https://github.com/acme/app/.github/workflows/release.yaml@refs/heads/main",
		"https://github.com/acme/fork/.github/workflows/release.yaml@refs/heads/main"
	store := sigstoretest.New(t)
	root := filepath.Join(t.TempDir(), "trusted_root.json")
	if err := os.WriteFile(root, store.TrustedRoot, 0o600); err != nil {
		t.Fatal(err)
	}
	var layers []registrytest.Layer
	sign := func(subject string) {
		t.Helper()
		now := time.Now()
		signed := store.Sign(t, sigstoretest.SimpleSigning(repo, digest), sigstoretest.Keyless{Subject: subject, Issuer: issuer, Issued: now.Add(-time.Minute), Logged: now})
		layers = append(layers, registrytest.Layer{Payload: signed.Payload, Annotations: signed.Annotations()})
		registrytest.PushSignatures(t, host, "demo/app", digest, layers...)
		runCosign(t, t.TempDir(), "verify", "--trusted-root", root, "--certificate-identity", subject, "--certificate-oidc-issuer", issuer,
			"--insecure-ignore-sct", "--allow-http-registry", "--allow-insecure-registry", repo+"@"+digest)
	}
	sign(other)
	s.create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "sigstore"}, Data: map[string]string{"trusted_root.json": string(store.TrustedRoot)}},
		deployment(s.ns, "app", repo+":1.0.0", 2), config(listedFrom(repo), func(c *v1alpha1.RollingUpgradeConfig) {
			c.Spec.Verify = &v1alpha1.Verify{Cosign: &v1alpha1.CosignVerify{Keyless: &v1alpha1.CosignKeyless{
				Issuer: issuer, Subject: team, TrustedRootRef: v1alpha1.ConfigMapKeyReference{Name: "sigstore"}}}}
		}))
	s.start(allowLoopbackRegistries)
	heldUntilSigned(s, repo, digest, "is not signed by "+team+" of "+issuer+" (spec.verify.cosign.keyless): none of its cosign signatures is by the identity",
		func() { sign(team) })
}

// heldUntilSigned: 1.1.0 of repo, at digest, waits Unsigned with a hold that says says, and is
// never rendered; once signTeam signs it, it rolls out, pinned by the digest that was verified.
func heldUntilSigned(s *scenario, repo, digest, says string, signTeam func()) {
	s.t.Helper()
	s.waitConfig(2*time.Minute, "1.1.0 held Unsigned", func(c *v1alpha1.RollingUpgradeConfig) bool {
		return c.Status.Hold != nil && c.Status.Hold.Reason == v1alpha1.ReasonUnsigned && strings.Contains(c.Status.Hold.Message, says)
	})
	if img := s.deploymentImage("app"); img != repo+":1.0.0" {
		s.t.Errorf("a version not signed as spec.verify says was rendered: %s", img)
	}
	signTeam()
	c := s.waitConfig(2*time.Minute, "1.1.0 current", func(c *v1alpha1.RollingUpgradeConfig) bool {
		return inPhase(c, v1alpha1.PhaseCompleted) && c.Status.CurrentVersion == "1.1.0"
	})
	if want := repo + ":1.1.0@" + digest; c.Status.CurrentImage != want {
		s.t.Errorf("current image %s, want %s: the digest that was verified", c.Status.CurrentImage, want)
	}
}

// runCosign runs the cosign the Makefile built in dir, with the keys' password.
func runCosign(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command(cosignBin, args...)
	cmd.Dir, cmd.Env = dir, append(os.Environ(), "COSIGN_PASSWORD=e2e")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("cosign %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

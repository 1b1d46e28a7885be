//go:build e2e

package e2e

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/registry/registrytest"
)

// TestScenarioARegistryPushStartsTheRollout: a config lists its registry every hour; a push of a
// new tag, announced by a signed generic notification to the manager's receiver endpoint, starts
// its rollout within seconds. An unsigned notification changes nothing.
func TestScenarioARegistryPushStartsTheRollout(t *testing.T) {
	inNamespaceOnly(t)
	s := newScenario(t, "push")
	host := startRegistry(t, "1.0.0", "1.1.0")
	repo := host + "/demo/app"
	s.create(deployment(s.ns, "app", repo+":1.0.0", 2), config(listedFrom(repo), func(c *v1alpha1.RollingUpgradeConfig) {
		c.Spec.Sources[0].Registry.Interval = &metav1.Duration{Duration: time.Hour}
	}))
	const token = "e2e-receiver-token-0123456789"
	file := filepath.Join(t.TempDir(), "receivers.yaml")
	if err := os.WriteFile(file, []byte("- {name: ci, kind: generic, token: "+token+"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	s.start(allowLoopbackRegistries, "--receiver-addr="+addr, "--receivers-file="+file)
	s.waitConfig(2*time.Minute, "1.1.0 current", func(c *v1alpha1.RollingUpgradeConfig) bool {
		return inPhase(c, v1alpha1.PhaseCompleted) && c.Status.CurrentVersion == "1.1.0"
	})

	registrytest.Push(t, host, "demo/app", "1.2.0")
	pushed := time.Now()
	body := `{"repository":"` + repo + `","tag":"1.2.0"}`
	if code, answer := notify(t, addr, body, "sha256=00"); code != http.StatusUnauthorized {
		t.Errorf("an unsigned notification: %d %s, want 401", code, answer)
	}
	mac := hmac.New(sha256.New, []byte(token))
	mac.Write([]byte(body))
	if code, answer := notify(t, addr, body, "sha256="+hex.EncodeToString(mac.Sum(nil))); code != http.StatusAccepted || !strings.Contains(answer, "1 configs look at") {
		t.Fatalf("the signed notification: %d %s", code, answer)
	}
	s.waitConfig(time.Minute, "1.2.0 started", func(c *v1alpha1.RollingUpgradeConfig) bool {
		return c.Status.TargetVersion == "1.2.0" || c.Status.CurrentVersion == "1.2.0"
	})
	t.Logf("from the push of 1.2.0 to its rollout: %s (registry source interval 1h)", time.Since(pushed).Round(10*time.Millisecond))
	s.waitConfig(2*time.Minute, "1.2.0 current", func(c *v1alpha1.RollingUpgradeConfig) bool {
		return inPhase(c, v1alpha1.PhaseCompleted) && c.Status.CurrentVersion == "1.2.0"
	})
}

// notify posts a generic push notification to the manager's receiver ci, retrying while the
// endpoint does not listen yet.
func notify(t *testing.T, addr, body, signature string) (int, string) {
	t.Helper()
	var last error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/hook/ci", strings.NewReader(body))
		req.Header.Set("X-Hub-Signature-256", signature)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			last = err
			continue
		}
		answer, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, string(answer)
	}
	t.Fatalf("the receiver endpoint at %s did not answer: %v", addr, last)
	return 0, ""
}

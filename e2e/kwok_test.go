//go:build e2e

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The kwok Stages of hack/cluster/stages.yaml are objects in the cluster. These helpers turn the
// knobs through hack/cluster/cluster.sh, as `make never-ready` and `make ready-delay` do, and turn
// them back when the test ends. The script finds the cluster through the variables make exports.

func clusterScript(t *testing.T, args ...string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(repoRoot, "hack", "cluster", "cluster.sh"), args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG_OUT="+kubeconfig)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("cluster.sh %v: %v\n%s", args, err, out)
	}
}

// neverReady makes pods that run any of images stay Running but never Ready, until the test ends.
func neverReady(t *testing.T, images ...string) {
	t.Helper()
	clusterScript(t, append([]string{"never-ready"}, images...)...)
	t.Cleanup(func() { clusterScript(t, "never-ready", "none") })
}

// readyDelay sets how long a new pod takes to become Ready, until the test ends.
func readyDelay(t *testing.T, ms int64) {
	t.Helper()
	before := strings.TrimSpace(mustKubectl(t, "get", "stages.kwok.x-k8s.io", "pod-ready", "-o", "jsonpath={.spec.delay.durationMilliseconds}"))
	clusterScript(t, "ready-delay", strconv.FormatInt(ms, 10))
	t.Cleanup(func() { clusterScript(t, "ready-delay", before) })
}

//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestClusterUpRecoversAndDownLeavesNothing drives hack/cluster/cluster.sh on a second, small
// cluster: a second `up` reuses a healthy cluster, an `up` after a crash recreates it, and `down`
// leaves no process behind.
func TestClusterUpRecoversAndDownLeavesNothing(t *testing.T) {
	for _, v := range []string{"KUBE_BIN", "ETCD_BIN", "KWOK_BIN", "CACHE"} {
		if os.Getenv(v) == "" {
			t.Fatalf("%s is not set: run through `make test-e2e`", v)
		}
	}
	name := "rollgate-e2e-recovery"
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	clusterDir := filepath.Join(os.Getenv("CACHE"), "kwok-workdir", "clusters", name)
	script := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(filepath.Join(repoRoot, "hack", "cluster", "cluster.sh"), args...)
		cmd.Env = append(os.Environ(), "CLUSTER="+name, "KUBECONFIG_OUT="+kc, "NODES=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("cluster.sh %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	processes := func() []string {
		out, _ := exec.Command("pgrep", "-f", clusterDir+"/").Output()
		return strings.Fields(string(out))
	}
	nodesReady := func() {
		t.Helper()
		out, err := exec.Command(kubectlBin, "--kubeconfig", kc, "get", "nodes", "--no-headers").CombinedOutput()
		if err != nil || !strings.Contains(string(out), " Ready ") {
			t.Fatalf("cluster %s has no Ready node: %v\n%s", name, err, out)
		}
	}
	t.Cleanup(func() { script("down") })

	script("up")
	nodesReady()
	if out := script("up"); !strings.Contains(out, "reusing it") {
		t.Errorf("second up did not reuse the running cluster:\n%s", out)
	}

	// A crash: every process of the cluster dies at once, its files stay behind.
	for _, pid := range processes() {
		var p int
		if _, err := fmt.Sscan(pid, &p); err == nil {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
	}
	if out := script("up"); !strings.Contains(out, "recreating it") {
		t.Errorf("up after a crash did not recreate the cluster:\n%s", out)
	}
	nodesReady()

	script("down")
	if left := processes(); len(left) > 0 {
		t.Errorf("processes left after down: %v", left)
	}
	if _, err := os.Stat(clusterDir); !os.IsNotExist(err) {
		t.Errorf("cluster directory left after down: %v", err)
	}
}

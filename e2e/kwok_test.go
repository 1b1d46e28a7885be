//go:build e2e

package e2e

import (
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
)

// The kwok Stages of hack/cluster/stages.yaml are objects in the cluster. These helpers turn their
// knobs for one namespace through hack/cluster/cluster.sh, as `make never-ready` does for the
// whole cluster, and turn them back when the test ends. The script finds the cluster through the
// variables make exports.

func clusterScript(t *testing.T, args ...string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(repoRoot, "hack", "cluster", "cluster.sh"), args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG_OUT="+kubeconfig)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("cluster.sh %v: %v\n%s", args, err, out)
	}
}

// knobs are the kwok settings of the tests, per namespace, so that tests in parallel neither see
// nor undo each other's: each change writes them all.
var knobs = struct {
	sync.Mutex
	neverReady map[string]bool  // NAMESPACE/IMAGE
	delays     map[string]int64 // namespace: milliseconds
}{neverReady: map[string]bool{}, delays: map[string]int64{}}

// neverReady makes the pods of namespace ns that run any of images stay Running but never Ready,
// until the test ends.
func neverReady(t *testing.T, ns string, images ...string) {
	t.Helper()
	entries := make([]string, len(images))
	for i, img := range images {
		entries[i] = ns + "/" + img
	}
	setKnobs(t, func() {
		for _, e := range entries {
			knobs.neverReady[e] = true
		}
	})
	t.Cleanup(func() {
		setKnobs(t, func() {
			for _, e := range entries {
				delete(knobs.neverReady, e)
			}
		})
	})
}

// readyDelay makes the pods of namespace ns start, and be Ready, ms milliseconds after they are
// scheduled (and after their image is changed in place), until the test ends.
func readyDelay(t *testing.T, ns string, ms int64) {
	t.Helper()
	setKnobs(t, func() { knobs.delays[ns] = ms })
	t.Cleanup(func() { setKnobs(t, func() { delete(knobs.delays, ns) }) })
}

// setKnobs changes the knobs and writes them to the cluster.
func setKnobs(t *testing.T, change func()) {
	t.Helper()
	knobs.Lock()
	defer knobs.Unlock()
	change()
	clusterScript(t, append([]string{"never-ready"}, slices.Sorted(maps.Keys(knobs.neverReady))...)...)
	delays := []string{}
	for ns, ms := range knobs.delays {
		delays = append(delays, ns+"="+strconv.FormatInt(ms, 10))
	}
	clusterScript(t, append([]string{"namespace-delays"}, delays...)...)
}

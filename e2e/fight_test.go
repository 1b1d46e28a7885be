//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rollgate/rollgate/api/v1alpha1"
)

// A GitOps tool without the ignore rule keeps applying the image from Git (simulated with
// kubectl apply --server-side --field-manager kustomize-controller --force-conflicts in a loop).
// rollgate renders its image back a few times, then stops instead of flapping the workload, and
// reports the other field manager and the fix.
func TestFightingFieldManagerIsReported(t *testing.T) {
	inNamespaceOnly(t)
	s := newScenario(t, "fight")
	fromGit := filepath.Join(t.TempDir(), "deployment.yaml")
	manifest := fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: app, namespace: %s}
spec:
  replicas: 2
  selector: {matchLabels: {app: app}}
  template:
    metadata: {labels: {app: app}}
    spec:
      containers:
      - {name: app, image: %q}
`, s.ns, img("1.0.0"))
	if err := os.WriteFile(fromGit, []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	flux := func() {
		mustKubectl(t, "apply", "--server-side", "--field-manager", "kustomize-controller", "--force-conflicts", "-f", fromGit)
	}
	flux()
	s.create(appVersion("1.0.0"), config())
	s.start()
	s.waitConfig(time.Minute, "the running version is recorded", func(c *v1alpha1.RollingUpgradeConfig) bool { return c.Status.CurrentVersion == "1.0.0" })
	s.announce("1.1.0")
	s.waitPhase(2*time.Minute, v1alpha1.PhaseCompleted)

	// Flux syncs every few seconds and puts 1.0.0 back each time.
	key := client.ObjectKey{Namespace: s.ns, Name: "app"}
	var d appsv1.Deployment
	for i := 0; i < 8; i++ {
		flux()
		time.Sleep(1500 * time.Millisecond)
	}
	c := s.waitConfig(time.Minute, "Stalled FieldManagerConflict", func(c *v1alpha1.RollingUpgradeConfig) bool {
		return strings.Contains(describeConfig(c), "FieldManagerConflict: field manager kustomize-controller changed the image")
	})
	if err := k8s.Get(context.Background(), key, &d); err != nil {
		t.Fatal(err)
	}
	if n, _ := strconv.Atoi(d.Annotations[v1alpha1.RevertsAnnotation]); n != v1alpha1.MaxImageReverts || d.Annotations[v1alpha1.RevertedByAnnotation] != "kustomize-controller" {
		t.Errorf("workload annotations %v", d.Annotations)
	}
	// rollgate stopped: the image stays where the other manager put it, and no more changes come.
	generation := d.Generation
	time.Sleep(3 * time.Second)
	if err := k8s.Get(context.Background(), key, &d); err != nil {
		t.Fatal(err)
	}
	if d.Generation != generation || d.Spec.Template.Spec.Containers[0].Image != img("1.0.0") {
		t.Errorf("the workload still flaps: generation %d -> %d, image %s", generation, d.Generation, d.Spec.Template.Spec.Containers[0].Image)
	}
	s.waitEvent(10*time.Second, "FieldManagerConflict", "spec.ignore")
	if !strings.Contains(describeConfig(c), "RollingUpgradeConfig") && c.Status.Phase == "" {
		t.Errorf("config %s", describeConfig(c))
	}

	// The tool is fixed (it stops applying) and a human removes the counter: rollgate renders again.
	mustKubectl(t, "-n", s.ns, "annotate", "deploy/app", v1alpha1.RevertsAnnotation+"-")
	eventually(t, time.Minute, "rendered again", func(ctx context.Context) (bool, string, error) {
		if err := k8s.Get(ctx, key, &d); err != nil {
			return false, "", err
		}
		return d.Spec.Template.Spec.Containers[0].Image == img("1.1.0"),
			fmt.Sprintf("image %s, annotations %v", d.Spec.Template.Spec.Containers[0].Image, d.Annotations), nil
	})
}

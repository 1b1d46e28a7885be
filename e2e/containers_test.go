//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rollgate/rollgate/api/v1alpha1"
)

// The app, its migration init container and a worker run one image and move together: 1.1.0 is
// rendered into the three and completes; 1.2.0 never becomes Ready, and its rollback takes the
// three back to 1.1.0. The proxy sidecar, which the config does not name, keeps its image, and no
// pod ever runs two versions in the three.
func TestScenarioSeveralContainersMoveTogether(t *testing.T) {
	inNamespaceOnly(t)
	s := newScenario(t, "containers")
	neverReady(t, s.ns, img("1.2.0"))
	const proxy = "e2e.local/demo/envoy:1.30.0"
	d := deployment(s.ns, "app", img("1.0.0"), 2)
	pod := &d.Spec.Template.Spec
	pod.InitContainers = []corev1.Container{{Name: "migrate", Image: img("1.0.0"), Command: []string{"migrate"}}}
	pod.Containers = append(pod.Containers, corev1.Container{Name: "worker", Image: img("1.0.0")}, corev1.Container{Name: "proxy", Image: proxy})
	s.create(d, appVersion("1.0.0"), config(func(c *v1alpha1.RollingUpgradeConfig) {
		c.Spec.Containers = []string{"app", "migrate", "worker"}
	}))
	s.start()
	s.waitConfig(time.Minute, "the running version is recorded", func(c *v1alpha1.RollingUpgradeConfig) bool { return c.Status.CurrentVersion == "1.0.0" })

	// runs is what the template or a pod runs in app, migrate, worker and proxy.
	runs := func(spec *corev1.PodSpec) string {
		byName := map[string]string{}
		for _, c := range slices.Concat(spec.InitContainers, spec.Containers) {
			byName[c.Name] = c.Image
		}
		return fmt.Sprintf("app %s, migrate %s, worker %s, proxy %s", byName["app"], byName["migrate"], byName["worker"], byName["proxy"])
	}
	together := func(version string) string {
		return fmt.Sprintf("app %s, migrate %s, worker %s, proxy %s", img(version), img(version), img(version), proxy)
	}
	template := func() string {
		var got appsv1.Deployment
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: s.ns, Name: "app"}, &got); err != nil {
			t.Fatal(err)
		}
		return runs(&got.Spec.Template.Spec)
	}
	// Every pod, of whichever version, runs one version in the three.
	podsTogether := func() {
		var pods corev1.PodList
		if err := k8s.List(context.Background(), &pods, client.InNamespace(s.ns), client.MatchingLabels{"app": "app"}); err != nil {
			t.Fatal(err)
		}
		for _, p := range pods.Items {
			got := runs(&p.Spec)
			if got != together("1.0.0") && got != together("1.1.0") && got != together("1.2.0") {
				t.Errorf("pod %s runs %s", p.Name, got)
			}
		}
	}

	s.announce("1.1.0")
	s.completed("1.1.0", 1, 2*time.Minute)
	if got := template(); got != together("1.1.0") {
		t.Errorf("after 1.1.0 the template runs %s", got)
	}
	podsTogether()

	s.announce("1.2.0")
	s.waitConfig(3*time.Minute, "1.2.0 in its health check", func(c *v1alpha1.RollingUpgradeConfig) bool {
		return c.Annotations[v1alpha1.TargetImageAnnotation] == img("1.2.0")
	})
	c := s.waitConfig(3*time.Minute, "1.2.0 rolled back", func(c *v1alpha1.RollingUpgradeConfig) bool {
		return c.Status.RollbackCount == 1 && c.Status.Phase == v1alpha1.PhaseIdle
	})
	if len(c.Status.FailedVersions) != 1 || c.Status.FailedVersions[0] != "1.2.0" {
		t.Errorf("failed versions %v", c.Status.FailedVersions)
	}
	if got := template(); got != together("1.1.0") {
		t.Errorf("after the rollback the template runs %s", got)
	}
	waitRolledOut(t, client.ObjectKey{Namespace: s.ns, Name: "app"}, time.Minute)
	podsTogether()
}

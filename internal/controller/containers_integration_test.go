//go:build integration

package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rollgate/rollgate/api/v1alpha1"
)

// TestIntegrationSeveralContainersMoveInOneWrite: a config that names an app container and its
// migration init container renders each version into both in one write (no state of the
// Deployment ever has them apart), leaves the container it does not name alone, puts back an
// image another field manager changes in the init container (and names that manager), and, once
// it names fewer containers, leaves the image of the one it let go where it was.
func TestIntegrationSeveralContainersMoveInOneWrite(t *testing.T) {
	ctx := context.Background()
	ns := "it-" + rand.String(6)
	must(t, k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	labels := map[string]string{"app": "web"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				InitContainers: []corev1.Container{{Name: "migrate", Image: repo + ":1.0.0", Command: []string{"migrate"}}},
				Containers:     []corev1.Container{{Name: "proxy", Image: "envoyproxy/envoy:v1.30.0"}, {Name: "web", Image: repo + ":1.0.0"}},
			}},
		},
	}
	must(t, k8s.Create(ctx, d))
	markRolledOut(t, d)
	cm := labelledCM("versions", map[string]string{"web": "1.1.0"})
	cm.Namespace = ns
	must(t, k8s.Create(ctx, cm))
	watch, err := k8s.Watch(ctx, &appsv1.DeploymentList{}, client.InNamespace(ns))
	must(t, err)
	defer watch.Stop()
	cfg := newConfig(ns, "web", cmSource("versions", "web"))
	cfg.Spec.Containers = []string{"web", "migrate"}
	must(t, k8s.Create(ctx, cfg))
	key := client.ObjectKey{Namespace: ns, Name: "web"}

	// images reads what the Deployment's template runs: proxy, web and migrate.
	images := func(d *appsv1.Deployment) (proxy, web, migrate string) {
		return d.Spec.Template.Spec.Containers[0].Image, d.Spec.Template.Spec.Containers[1].Image, d.Spec.Template.Spec.InitContainers[0].Image
	}
	// Every state of the Deployment up to the one that runs 1.1.0 has web and migrate together.
	deadline := time.After(30 * time.Second)
	for rendered := false; !rendered; {
		select {
		case ev := <-watch.ResultChan():
			got, ok := ev.Object.(*appsv1.Deployment)
			if !ok {
				t.Fatalf("watch: %v", ev.Object)
			}
			proxy, web, migrate := images(got)
			if web != migrate || proxy != "envoyproxy/envoy:v1.30.0" {
				t.Fatalf("generation %d: web %s, migrate %s, proxy %s: the containers moved apart, or the unnamed one moved", got.Generation, web, migrate, proxy)
			}
			rendered = web == repo+":1.1.0"
			d = got
		case <-deadline:
			t.Fatal("1.1.0 was not rendered within 30s")
		}
	}
	markRolledOut(t, d)
	waitConfig(t, key, "1.1.0 rolled out", func(r *v1alpha1.RollingUpgradeConfig) bool { return r.Status.CurrentImage == repo+":1.1.0" })

	// Another field manager puts the init container back: rollgate renders it again, and the
	// revert names that manager.
	patch := []byte(fmt.Sprintf(`{"spec":{"template":{"spec":{"initContainers":[{"name":"migrate","image":%q}]}}}}`, repo+":1.0.0"))
	must(t, k8s.Patch(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}},
		client.RawPatch("application/strategic-merge-patch+json", patch), client.FieldOwner("helm")))
	d = waitDeployment(t, key, "migrate put back, the revert recorded", func(d *appsv1.Deployment) bool {
		_, _, migrate := images(d)
		return migrate == repo+":1.1.0" && d.Annotations[v1alpha1.RevertedByAnnotation] == "helm"
	})

	// Naming web alone, then rolling out 1.2.0: migrate keeps 1.1.0.
	must(t, k8s.Get(ctx, key, cfg))
	cfg.Spec.Containers = []string{"web"}
	must(t, k8s.Update(ctx, cfg))
	markRolledOut(t, d)
	waitConfig(t, key, "web recorded afresh", func(r *v1alpha1.RollingUpgradeConfig) bool {
		return r.Status.RecordedTarget != nil && r.Status.RecordedTarget.Container == "web" && r.Status.CurrentImage == repo+":1.1.0"
	})
	must(t, k8s.Get(ctx, client.ObjectKeyFromObject(cm), cm))
	cm.Data["web"] = "1.2.0"
	must(t, k8s.Update(ctx, cm))
	d = waitDeployment(t, key, "1.2.0 rendered into web", func(d *appsv1.Deployment) bool {
		_, web, _ := images(d)
		return web == repo+":1.2.0"
	})
	if proxy, _, migrate := images(d); migrate != repo+":1.1.0" || proxy != "envoyproxy/envoy:v1.30.0" {
		t.Errorf("after naming web alone: migrate %s, proxy %s; want them as they were", migrate, proxy)
	}
}

// waitDeployment waits until the Deployment satisfies ok; what is the state it waits for.
func waitDeployment(t *testing.T, key client.ObjectKey, what string, ok func(*appsv1.Deployment) bool) *appsv1.Deployment {
	t.Helper()
	var d appsv1.Deployment
	if err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		if err := k8s.Get(ctx, key, &d); err != nil {
			return false, err
		}
		return ok(&d), nil
	}); err != nil {
		t.Fatalf("%s: %s not reached: %v; annotations %v", key, what, err, d.Annotations)
	}
	return &d
}

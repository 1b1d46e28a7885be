package engine

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/kube"
	"github.com/rollgate/rollgate/internal/kube/kubetest"
)

// Containers that run different images are judged by the one another hand changed while an image
// is recorded for them, and are a problem when none is: also right after they are named, when the
// image recorded is the one of the containers named before, which a rollback must not take.
func TestTheImageOfSeveralContainers(t *testing.T) {
	const repo = "ghcr.io/acme/web"
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web",
		Annotations: map[string]string{v1alpha1.LastImageAnnotation: repo + ":1.1.0"}}}
	d.Spec.Template.Spec = corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "migrate", Image: repo + ":1.0.0"}},
		Containers:     []corev1.Container{{Name: "web", Image: repo + ":1.1.0"}},
	}
	c := fake.NewClientBuilder().WithScheme(kubetest.NewScheme(t)).WithObjects(d).Build()
	web := v1alpha1.RecordedTarget{Kind: v1alpha1.KindDeployment, Name: "web", Container: "web"}
	both := v1alpha1.RecordedTarget{Kind: v1alpha1.KindDeployment, Name: "web", Containers: []string{"migrate", "web"}}
	for _, tc := range []struct {
		name     string
		recorded *v1alpha1.RecordedTarget
		image    string // what the workload runs, when no problem
	}{
		{"recorded for both: migrate was changed by another hand", &both, repo + ":1.0.0"},
		{"recorded for web alone: a problem", &web, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ruc := &v1alpha1.RollingUpgradeConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"},
				Spec: v1alpha1.RollingUpgradeConfigSpec{TargetRef: v1alpha1.WorkloadReference{Kind: v1alpha1.KindDeployment, Name: "web"},
					Image: repo, Containers: []string{"web", "migrate"}},
				Status: v1alpha1.RollingUpgradeConfigStatus{CurrentImage: repo + ":1.1.0", RecordedTarget: tc.recorded}}
			f, err := facts(context.Background(), c, ruc, &kube.Workload{Deployment: d}, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if f.Image != tc.image || (tc.image == "") != strings.Contains(f.ContainerProblem, "run different images") || f.Container != "web" && tc.image != "" {
				t.Errorf("image %q, container %q, problem %q; want image %q", f.Image, f.Container, f.ContainerProblem, tc.image)
			}
		})
	}
}

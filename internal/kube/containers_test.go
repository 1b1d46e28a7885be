package kube

import (
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rollgate/rollgate/internal/rollout"
)

func TestManagedContainers(t *testing.T) {
	spec := &corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "migrate", Image: "web:1"}, {Name: "proxy", Image: "envoy:1"}},
		Containers:     []corev1.Container{{Name: "web", Image: "web:1"}, {Name: "worker", Image: "web:1"}},
	}
	for _, tc := range []struct {
		name    string
		names   []string
		want    []rollout.Container
		missing []string
	}{
		{"none named: the first container", nil, []rollout.Container{{Name: "web", Image: "web:1"}}, nil},
		{"init containers are found by name", []string{"worker", "migrate"},
			[]rollout.Container{{Name: "worker", Image: "web:1"}, {Name: "migrate", Image: "web:1", Init: true}}, nil},
		{"those missing are named", []string{"web", "cron", "jobs"}, []rollout.Container{{Name: "web", Image: "web:1"}}, []string{"cron", "jobs"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, missing := ManagedContainers(spec, tc.names)
			if !slices.Equal(got, tc.want) || !slices.Equal(missing, tc.missing) {
				t.Errorf("got %+v, missing %v; want %+v, %v", got, missing, tc.want, tc.missing)
			}
		})
	}
	w := &Workload{Deployment: &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}}}
	w.Deployment.Spec.Template.Spec = *spec
	if _, err := w.Containers([]string{"web", "cron"}); err == nil ||
		err.Error() != `container "cron" not found in Deployment web (containers: web, worker, migrate, proxy)` {
		t.Errorf("error %v", err)
	}
	w.Deployment.Spec.Template.Spec = corev1.PodSpec{}
	if _, err := w.Containers(nil); err == nil || err.Error() != "Deployment web has no containers" {
		t.Errorf("error %v", err)
	}
}

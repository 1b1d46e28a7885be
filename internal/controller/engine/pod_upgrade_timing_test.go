package engine

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/kube"
	"github.com/rollgate/rollgate/internal/kube/kubetest"
	"github.com/rollgate/rollgate/internal/rollout"
)

func TestPodUpgradeDurations(t *testing.T) {
	since := time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)
	pod := func(created time.Duration, ready *time.Duration, containers ...corev1.Container) corev1.Pod {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(since.Add(created))}}
		p.Spec.Containers = containers
		if ready != nil {
			p.Status.Conditions = []corev1.PodCondition{
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(since.Add(created))},
				{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(since.Add(created + *ready))},
			}
		}
		return p
	}
	after := func(d time.Duration) *time.Duration { return &d }
	app := func(image string) corev1.Container { return corev1.Container{Name: "app", Image: image} }
	worker := func(image string) corev1.Container { return corev1.Container{Name: "worker", Image: image} }
	sidecar := corev1.Container{Name: "proxy", Image: "envoy:1"}
	const newImage = "ghcr.io/acme/web:1.4.0"

	for _, tc := range []struct {
		name       string
		pods       []corev1.Pod
		containers []string
		want       []time.Duration
	}{
		{"new pods that became ready are timed", []corev1.Pod{
			pod(2*time.Second, after(5*time.Second), app(newImage)),
			pod(9*time.Second, after(3*time.Second), app(newImage)),
		}, nil, []time.Duration{5 * time.Second, 3 * time.Second}},
		{"pods of the old version are left out", []corev1.Pod{
			pod(-time.Hour, after(time.Second), app("ghcr.io/acme/web:1.3.0")),
			pod(time.Second, after(4*time.Second), app(newImage)),
		}, nil, []time.Duration{4 * time.Second}},
		{"a pod of the new image created before the rollout (a hand edit) is left out", []corev1.Pod{
			pod(-time.Minute, after(time.Second), app(newImage)),
		}, nil, nil},
		{"pods not ready yet are left out", []corev1.Pod{
			pod(time.Second, nil, app(newImage)),
		}, nil, nil},
		{"the named container is the one compared", []corev1.Pod{
			pod(time.Second, after(2*time.Second), sidecar, app(newImage)),
		}, []string{"app"}, []time.Duration{2 * time.Second}},
		{"without a name the first container is the managed one", []corev1.Pod{
			pod(time.Second, after(2*time.Second), sidecar, app(newImage)),
		}, nil, nil},
		{"of several containers, a pod runs the version when all of them do", []corev1.Pod{
			pod(time.Second, after(2*time.Second), app(newImage), worker(newImage)),
			pod(time.Second, after(3*time.Second), app(newImage), worker("ghcr.io/acme/web:1.3.0")),
			pod(time.Second, after(4*time.Second), app(newImage)),
		}, []string{"app", "worker"}, []time.Duration{2 * time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := podUpgradeDurations(tc.pods, tc.containers, newImage, since)
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("got %v, want %v", got, tc.want)
				}
			}
		})
	}
}

func TestPodsOfAVersion(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)
	// pod is created at t0+created; started is its status.startTime (0: no node has started it).
	pod := func(created, started time.Duration, ready bool, image string) corev1.Pod {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(t0.Add(created))}}
		p.Spec.Containers = []corev1.Container{{Name: "proxy", Image: "envoy:1"}, {Name: "app", Image: image}}
		if started != 0 {
			p.Status.StartTime = &metav1.Time{Time: t0.Add(started)}
		}
		status := corev1.ConditionFalse
		if ready {
			status = corev1.ConditionTrue
		}
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}
		return p
	}
	const newImage = "ghcr.io/acme/web:1.4.0"
	deleting := pod(0, time.Second, false, newImage)
	deleting.DeletionTimestamp = &metav1.Time{Time: t0}
	evicted := pod(0, time.Second, false, newImage)
	evicted.Status.Phase = corev1.PodFailed
	got := podsOf([]corev1.Pod{
		pod(-time.Hour, -time.Hour, false, "ghcr.io/acme/web:1.3.0"), // the old version
		pod(5*time.Second, 6*time.Second, true, newImage),
		pod(1*time.Second, 0, false, newImage),                                                // not started on a node yet
		pod(3*time.Second, 9*time.Second, false, newImage+"@sha256:"+strings.Repeat("a", 64)), // pinned by a webhook: still the version
		pod(4*time.Second, 7*time.Second, false, newImage),
		deleting,
		evicted, // started first, never Ready: but it has ended
	}, []string{"app"}, newImage)
	if want := (rollout.Pods{Count: 4, Ready: 1, OldestUnreadyStart: t0.Add(7 * time.Second)}); *got != want {
		t.Errorf("pods = %+v, want %+v", *got, want)
	}
	if none := podsOf(nil, []string{"app"}, newImage); *none != (rollout.Pods{}) {
		t.Errorf("no pods = %+v", *none)
	}
}

// A reconcile that ends a check past its deadline needs the pods twice (the evidence, then the
// timing): they are listed once.
func TestAWorkloadsPodsAreListedOncePerReconcile(t *testing.T) {
	lists := 0
	c := fake.NewClientBuilder().WithScheme(kubetest.NewScheme(t)).WithObjects(kubetest.Objects()...).
		WithInterceptorFuncs(interceptor.Funcs{List: func(ctx context.Context, cl client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if _, ok := list.(*corev1.PodList); ok {
				lists++
			}
			return cl.List(ctx, list, opts...)
		}}).Build()
	ctx := context.Background()
	var ruc v1alpha1.RollingUpgradeConfig
	if err := c.Get(ctx, client.ObjectKey{Namespace: "shop", Name: "web"}, &ruc); err != nil {
		t.Fatal(err)
	}
	w, err := kube.GetWorkload(ctx, c, c, &ruc)
	if err != nil || w == nil {
		t.Fatalf("workload %v, %v", w, err)
	}
	if _, err := newPods(ctx, c, w, nil, "ghcr.io/acme/web:1.1.0"); err != nil {
		t.Fatal(err)
	}
	if _, err := podUpgradeTimes(ctx, c, w, nil, "ghcr.io/acme/web:1.1.0", time.Time{}); err != nil {
		t.Fatal(err)
	}
	if lists != 1 {
		t.Errorf("pods listed %d times, want 1", lists)
	}
}

package engine

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rollgate/rollgate/internal/health"
	imageref "github.com/rollgate/rollgate/internal/image"
	"github.com/rollgate/rollgate/internal/kube"
	"github.com/rollgate/rollgate/internal/rollout"
)

// podUpgradeTimes lists the workload's pods (uncached: the manager does not watch pods) and times
// those that run image in the managed container and were created since the rollout started.
func podUpgradeTimes(ctx context.Context, reader client.Reader, w *kube.Workload, containers []string, image string, since time.Time) ([]time.Duration, error) {
	pods, err := w.Pods(ctx, reader)
	if err != nil {
		return nil, err
	}
	return podUpgradeDurations(pods, containers, image, since), nil
}

// podUpgradeDurations is, for every pod of the new version that became Ready, the time from its
// creation to its Ready condition. A pod of the new version is one created at or after since whose
// managed containers run image; pods not Ready yet are left out.
func podUpgradeDurations(pods []corev1.Pod, containers []string, image string, since time.Time) []time.Duration {
	var out []time.Duration
	for i := range pods {
		p := &pods[i]
		created := p.CreationTimestamp.Time
		if created.Before(since) || !runsImage(p, containers, image) {
			continue
		}
		if r := health.ReadyCondition(p); r != nil && r.Status == corev1.ConditionTrue && !r.LastTransitionTime.Time.Before(created) {
			out = append(out, r.LastTransitionTime.Sub(created))
		}
	}
	return out
}

// newPods sums up the workload's pods that run image in the managed container and are neither
// being deleted nor ended (uncached: the manager does not watch pods).
func newPods(ctx context.Context, reader client.Reader, w *kube.Workload, containers []string, image string) (*rollout.Pods, error) {
	pods, err := w.Pods(ctx, reader)
	if err != nil {
		return nil, err
	}
	return podsOf(pods, containers, image), nil
}

// runsImage: every managed container of the pod (the named ones, or the first) runs image.
func runsImage(p *corev1.Pod, containers []string, image string) bool {
	cs, missing := kube.ManagedContainers(&p.Spec, containers)
	if len(missing) > 0 {
		return false
	}
	for _, c := range cs {
		if !imageref.Renders(c.Image, image) {
			return false
		}
	}
	return true
}

func podsOf(pods []corev1.Pod, containers []string, image string) *rollout.Pods {
	out := &rollout.Pods{}
	for i := range pods {
		p := &pods[i]
		// A pod that has ended (evicted, or refused by its node's kubelet) says nothing about the
		// version, and its controller replaces it.
		if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded ||
			!runsImage(p, containers, image) {
			continue
		}
		out.Count++
		if r := health.ReadyCondition(p); r != nil && r.Status == corev1.ConditionTrue {
			out.Ready++
			continue
		}
		if s := p.Status.StartTime; s != nil && (out.OldestUnreadyStart.IsZero() || s.Time.Before(out.OldestUnreadyStart)) {
			out.OldestUnreadyStart = s.Time
		}
	}
	return out
}

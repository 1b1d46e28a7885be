package engine

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/rollgate/rollgate/internal/health"
	"github.com/rollgate/rollgate/internal/kube"
)

// deleteStuckPods deletes the pods of a StatefulSet that belong to another revision than its update
// revision and are not Ready. With OrderedReady pod management the StatefulSet controller waits for
// such a pod to become Ready before it replaces it, which a broken version never does, so a rollback
// of the template alone never finishes (kubernetes/kubernetes#67250). Pods are read uncached: the
// manager does not watch pods.
func deleteStuckPods(ctx context.Context, reader client.Reader, writer client.Writer, sts *appsv1.StatefulSet) error {
	pods, err := kube.ListPods(ctx, reader, sts.Namespace, sts.Spec.Selector)
	if err != nil {
		return fmt.Errorf("StatefulSet %s: %w", sts.Name, err)
	}
	for i := range pods {
		p := &pods[i]
		owner := metav1.GetControllerOf(p)
		if owner == nil || owner.UID != sts.UID || p.DeletionTimestamp != nil ||
			p.Labels[appsv1.StatefulSetRevisionLabel] == sts.Status.UpdateRevision || podReady(p) {
			continue
		}
		logf.FromContext(ctx).Info("deleting a pod of the failed revision so the rollback can proceed",
			"pod", p.Name, "revision", p.Labels[appsv1.StatefulSetRevisionLabel])
		if err := writer.Delete(ctx, p, client.Preconditions{UID: &p.UID}); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	return nil
}

func podReady(p *corev1.Pod) bool {
	c := health.ReadyCondition(p)
	return c != nil && c.Status == corev1.ConditionTrue
}

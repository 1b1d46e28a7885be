// Package kube is the Kubernetes layer the controllers share: reading a config's workload and
// its pods, which config claims a workload, the field indexes and watches that map objects to
// configs, predicates, the cache transform that trims unnamed workloads, the event recorder, and
// who owns a workload's image field. It decides nothing about rollouts.
package kube

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/health"
)

// Workload is a config's Deployment or StatefulSet as read from the cache.
type Workload struct {
	Deployment  *appsv1.Deployment
	StatefulSet *appsv1.StatefulSet

	// pods are its pods once listed (Pods): one reconcile may need them for the verdict of a
	// partitioned StatefulSet, a check past its deadline and the timing of a rollout's pods.
	pods     []corev1.Pod
	podsRead bool
}

// GetWorkload reads the target of a config from c; nil when it does not exist. A workload that the
// cache keeps as a shell (no config named it when it last changed: CacheTrim) is read from live.
func GetWorkload(ctx context.Context, c, live client.Reader, ruc *v1alpha1.RollingUpgradeConfig) (*Workload, error) {
	w, err := ReadWorkload(ctx, c, ruc)
	if err != nil || w == nil || w.Selector() != nil {
		return w, err
	}
	return ReadWorkload(ctx, live, ruc)
}

func ReadWorkload(ctx context.Context, c client.Reader, ruc *v1alpha1.RollingUpgradeConfig) (*Workload, error) {
	key := client.ObjectKey{Namespace: ruc.Namespace, Name: ruc.Spec.TargetRef.Name}
	var w Workload
	var obj client.Object
	switch ruc.Spec.TargetRef.Kind {
	case v1alpha1.KindDeployment:
		w.Deployment = &appsv1.Deployment{}
		obj = w.Deployment
	case v1alpha1.KindStatefulSet:
		w.StatefulSet = &appsv1.StatefulSet{}
		obj = w.StatefulSet
	default:
		// The CRD's enum keeps other kinds out at admission.
		return nil, fmt.Errorf("unsupported target kind %q", ruc.Spec.TargetRef.Kind)
	}
	if err := c.Get(ctx, key, obj); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	return &w, nil
}

func (w *Workload) Object() client.Object {
	if w.Deployment != nil {
		return w.Deployment
	}
	return w.StatefulSet
}

func (w *Workload) Kind() v1alpha1.WorkloadKind {
	if w.Deployment != nil {
		return v1alpha1.KindDeployment
	}
	return v1alpha1.KindStatefulSet
}

func (w *Workload) Describe() string { return string(w.Kind()) + " " + w.Object().GetName() }

func (w *Workload) PodSpec() *corev1.PodSpec {
	if w.Deployment != nil {
		return &w.Deployment.Spec.Template.Spec
	}
	return &w.StatefulSet.Spec.Template.Spec
}

func (w *Workload) ObservedGeneration() int64 {
	if w.Deployment != nil {
		return w.Deployment.Status.ObservedGeneration
	}
	return w.StatefulSet.Status.ObservedGeneration
}

func (w *Workload) Selector() *metav1.LabelSelector {
	if w.Deployment != nil {
		return w.Deployment.Spec.Selector
	}
	return w.StatefulSet.Spec.Selector
}

// ListPods reads the pods a workload's selector matches, uncached: the manager does not watch pods.
func ListPods(ctx context.Context, reader client.Reader, namespace string, sel *metav1.LabelSelector) ([]corev1.Pod, error) {
	selector, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return nil, fmt.Errorf("selector: %w", err)
	}
	var pods corev1.PodList
	if err := reader.List(ctx, &pods, client.InNamespace(namespace), client.MatchingLabelsSelector{Selector: selector}); err != nil {
		return nil, err
	}
	return pods.Items, nil
}

// Pods lists the workload's pods the first time it is asked, and returns the same list after.
func (w *Workload) Pods(ctx context.Context, reader client.Reader) ([]corev1.Pod, error) {
	if !w.podsRead {
		pods, err := ListPods(ctx, reader, w.Object().GetNamespace(), w.Selector())
		if err != nil {
			return nil, fmt.Errorf("%s: %w", w.Describe(), err)
		}
		w.pods, w.podsRead = pods, true
	}
	return w.pods, nil
}

// Verdict judges the workload. The pods of a StatefulSet are read (uncached) only when it has a
// partition, the one case where its status counts cannot tell the new pods from the old.
func (w *Workload) Verdict(ctx context.Context, reader client.Reader, opts health.Options) (health.Verdict, error) {
	if w.Deployment != nil {
		return health.Deployment(w.Deployment, opts), nil
	}
	var pods []corev1.Pod
	if health.NeedsPods(w.StatefulSet) {
		var err error
		if pods, err = w.Pods(ctx, reader); err != nil {
			return health.Verdict{}, err
		}
	}
	return health.StatefulSet(w.StatefulSet, pods, opts), nil
}

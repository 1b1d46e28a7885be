package controllers

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/controllers/health"
	"github.com/rollgate/rollgate/controllers/inplace"
	"github.com/rollgate/rollgate/controllers/rollout"
)

// workload is a config's Deployment or StatefulSet as read from the cache.
type workload struct {
	deployment  *appsv1.Deployment
	statefulSet *appsv1.StatefulSet

	// pods are its pods once listed (podsOnce): one reconcile may need them for the verdict of a
	// partitioned StatefulSet, a check past its deadline and the timing of a rollout's pods.
	pods     []corev1.Pod
	podsRead bool

	// inPlace is the plan of the moves of its pods, for a StatefulSet upgraded in place.
	inPlace *inplace.Plan
	// releaseGates: its pods may carry rollgate's readiness gate with no in-place upgrade to put
	// them back in service (releasePods).
	releaseGates bool
}

// getWorkload reads the target of a config from c; nil when it does not exist. A workload that the
// cache keeps as a shell (no config named it when it last changed: CacheTrim) is read from live.
func getWorkload(ctx context.Context, c, live client.Reader, ruc *v1alpha1.RollingUpgradeConfig) (*workload, error) {
	w, err := readWorkload(ctx, c, ruc)
	if err != nil || w == nil || w.selector() != nil {
		return w, err
	}
	return readWorkload(ctx, live, ruc)
}

func readWorkload(ctx context.Context, c client.Reader, ruc *v1alpha1.RollingUpgradeConfig) (*workload, error) {
	key := client.ObjectKey{Namespace: ruc.Namespace, Name: ruc.Spec.TargetRef.Name}
	var w workload
	var obj client.Object
	switch ruc.Spec.TargetRef.Kind {
	case v1alpha1.KindDeployment:
		w.deployment = &appsv1.Deployment{}
		obj = w.deployment
	case v1alpha1.KindStatefulSet:
		w.statefulSet = &appsv1.StatefulSet{}
		obj = w.statefulSet
	default:
		// The CRD's enum keeps other kinds out at admission.
		return nil, fmt.Errorf("unsupported target kind %q", ruc.Spec.TargetRef.Kind)
	}
	if err := c.Get(ctx, key, obj); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	return &w, nil
}

func (w *workload) object() client.Object {
	if w.deployment != nil {
		return w.deployment
	}
	return w.statefulSet
}

func (w *workload) kind() v1alpha1.WorkloadKind {
	if w.deployment != nil {
		return v1alpha1.KindDeployment
	}
	return v1alpha1.KindStatefulSet
}

func (w *workload) describe() string { return string(w.kind()) + " " + w.object().GetName() }

func (w *workload) podSpec() *corev1.PodSpec {
	if w.deployment != nil {
		return &w.deployment.Spec.Template.Spec
	}
	return &w.statefulSet.Spec.Template.Spec
}

func (w *workload) observedGeneration() int64 {
	if w.deployment != nil {
		return w.deployment.Status.ObservedGeneration
	}
	return w.statefulSet.Status.ObservedGeneration
}

func (w *workload) selector() *metav1.LabelSelector {
	if w.deployment != nil {
		return w.deployment.Spec.Selector
	}
	return w.statefulSet.Spec.Selector
}

// listPods reads the pods a workload's selector matches, uncached: the manager does not watch pods.
func listPods(ctx context.Context, reader client.Reader, namespace string, sel *metav1.LabelSelector) ([]corev1.Pod, error) {
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

// podsOnce lists the workload's pods the first time it is asked, and returns the same list after.
func (w *workload) podsOnce(ctx context.Context, reader client.Reader) ([]corev1.Pod, error) {
	if !w.podsRead {
		pods, err := listPods(ctx, reader, w.object().GetNamespace(), w.selector())
		if err != nil {
			return nil, fmt.Errorf("%s: %w", w.describe(), err)
		}
		w.pods, w.podsRead = pods, true
	}
	return w.pods, nil
}

// verdict judges the workload. The pods of a StatefulSet are read (uncached) only when it has a
// partition, the one case where its status counts cannot tell the new pods from the old.
func (w *workload) verdict(ctx context.Context, reader client.Reader, opts health.Options) (health.Verdict, error) {
	if w.deployment != nil {
		return health.Deployment(w.deployment, opts), nil
	}
	var pods []corev1.Pod
	if health.NeedsPods(w.statefulSet) {
		var err error
		if pods, err = w.podsOnce(ctx, reader); err != nil {
			return health.Verdict{}, err
		}
	}
	return health.StatefulSet(w.statefulSet, pods, opts), nil
}

// container finds the managed container: the named one, or the first.
func (w *workload) container(name string) (*corev1.Container, error) {
	cs := w.podSpec().Containers
	if len(cs) == 0 {
		return nil, fmt.Errorf("%s has no containers", w.describe())
	}
	if c := managedContainer(cs, name); c != nil {
		return c, nil
	}
	names := make([]string, 0, len(cs))
	for i := range cs {
		names = append(names, cs[i].Name)
	}
	return nil, fmt.Errorf("container %q not found in %s (containers: %s)", name, w.describe(), strings.Join(names, ", "))
}

// managedContainer is the container a config manages among cs: the named one, or the first; nil
// when there is none.
func managedContainer(cs []corev1.Container, name string) *corev1.Container {
	for i := range cs {
		if name == "" || cs[i].Name == name {
			return &cs[i]
		}
	}
	return nil
}

// facts is what the rollout decision needs to know of the workload.
func (w *workload) facts(ctx context.Context, reader client.Reader, ruc *v1alpha1.RollingUpgradeConfig, now time.Time) (*rollout.Workload, error) {
	spec := ruc.Spec
	var v health.Verdict
	var err error
	if spec.InPlace() != nil && w.statefulSet != nil {
		v, err = w.inPlaceVerdict(ctx, reader, ruc, now)
	} else {
		// Pods keep the gates they were created with: those of a template that has the gate, or
		// those an in-place upgrade the status still records moved (its strategy and the
		// template's gate may have gone in one edit).
		w.releaseGates = w.statefulSet != nil && (hasGate(w.statefulSet.Spec.Template.Spec.ReadinessGates) || ruc.Status.InPlace != nil)
		v, err = w.verdict(ctx, reader, health.Options{AllowZeroReplicas: spec.AllowZeroReplicas, Now: now})
	}
	if err != nil {
		return nil, err
	}
	f := &rollout.Workload{Description: w.describe(), Verdict: v, InPlace: w.inPlace}
	if c, err := w.container(spec.Container); err != nil {
		f.ContainerProblem = err.Error()
	} else {
		f.Image, f.Container = c.Image, c.Name
	}
	if w.deployment != nil {
		f.ProgressDeadline = time.Duration(ptr.Deref(w.deployment.Spec.ProgressDeadlineSeconds, 600)) * time.Second
	}
	// Stuck pods are deleted in a rollback only when their StatefulSet replaces them in order, which
	// an in-place upgrade does not leave it to.
	f.OrderedReadyStatefulSet = w.statefulSet != nil && w.statefulSet.Spec.PodManagementPolicy != appsv1.ParallelPodManagement && w.inPlace == nil
	f.GenerationObserved = w.observedGeneration() >= w.object().GetGeneration()
	a := w.object().GetAnnotations()
	f.ImageReverts, f.ImageRevertedBy = reverts(a), a[v1alpha1.RevertedByAnnotation]
	f.ImageRevertedAt, _ = time.Parse(time.RFC3339, a[v1alpha1.RevertedAtAnnotation])
	return f, nil
}

package podgate

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/health"
	"github.com/rollgate/rollgate/internal/kube"
)

// GateReconciler answers rollgate's readiness gate for the pods of every StatefulSet whose pod
// template carries it while no config upgrades it in place: the config was deleted, its strategy
// changed, or it never existed. A pod created from that template has the gate and no condition
// for it, and without an answer it would never be Ready; a pod drained when the config went while
// no manager ran (its finalizer removed by hand) has it False. A StatefulSet under an in-place upgrade
// is left to its config, whose plan answers new pods as they come (and whose drained pods must
// stay out). The StatefulSet's events (its controller counts pods as they are created and become
// ready) bring it here; its pods are read only then, and only for a gated one.
type GateReconciler struct {
	Client    client.Client
	APIReader client.Reader // uncached: pods, a shell's StatefulSet, and the configs of every shard
	Recorder  events.EventRecorder
	Clock     clock.PassiveClock
}

func (r *GateReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var sts appsv1.StatefulSet
	if err := r.Client.Get(ctx, req.NamespacedName, &sts); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if sts.Spec.Selector == nil { // a shell: the cache says whether it is gated
		if sts.Annotations[kube.GatedAnnotation] == "" {
			return ctrl.Result{}, nil
		}
		if err := r.APIReader.Get(ctx, req.NamespacedName, &sts); err != nil {
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
	}
	if !kube.HasGate(sts.Spec.Template.Spec.ReadinessGates) || sts.DeletionTimestamp != nil {
		return ctrl.Result{}, nil
	}
	// The cache answers for this shard's configs (every event of a StatefulSet under an upgrade);
	// those of other shards are listed live only when it finds none.
	for _, configs := range []client.Reader{r.Client, r.APIReader} {
		if upgraded, err := upgradedInPlace(ctx, configs, &sts); err != nil || upgraded {
			return ctrl.Result{}, err
		}
	}
	pods, err := kube.ListPods(ctx, r.APIReader, sts.Namespace, sts.Spec.Selector)
	if err != nil {
		return ctrl.Result{}, err
	}
	var answered []string
	for i := range pods {
		pod := &pods[i]
		if !ownedBy(pod, &sts) || !kube.HasGate(pod.Spec.ReadinessGates) || pod.DeletionTimestamp != nil || kube.GateTrue(pod) {
			continue
		}
		// A gate set False a moment ago is someone's drain in flight (a config that has just
		// turned to InPlace, listed above before it wrote): it is left to its config.
		if c := health.Condition(pod, v1alpha1.InPlaceReadinessGate); c != nil && r.Clock.Since(c.LastTransitionTime.Time) < freshDrain {
			continue
		}
		data, err := json.Marshal(gatePatch(true, "", r.Clock.Now()))
		if err != nil {
			return ctrl.Result{}, err
		}
		if err := r.Client.Status().Patch(ctx, pod, client.RawPatch(types.StrategicMergePatchType, data), client.FieldOwner(v1alpha1.FieldManager)); err != nil && !apierrors.IsNotFound(err) {
			return ctrl.Result{}, fmt.Errorf("answering the readiness gate of pod %s: %w", pod.Name, err)
		}
		answered = append(answered, pod.Name)
	}
	if len(answered) > 0 {
		r.Recorder.Eventf(&sts, nil, corev1.EventTypeWarning, v1alpha1.EventUnansweredReadinessGate, "AnswerGate",
			"the pod template keeps the readiness gate %s while no RollingUpgradeConfig upgrades this StatefulSet in place: rollgate answered it for pods %s; "+
				"remove the gate from the template (pods created while no rollgate manager runs are never Ready)",
			v1alpha1.InPlaceReadinessGate, strings.Join(answered, ", "))
	}
	return ctrl.Result{}, nil
}

// freshDrain is how long a gate set False is taken for a drain in flight.
const freshDrain = time.Minute

// ownedBy: pod is one of sts's (its controller), not another workload's that the selector matches.
func ownedBy(pod *corev1.Pod, sts *appsv1.StatefulSet) bool {
	ref := metav1.GetControllerOf(pod)
	return ref != nil && ref.UID == sts.UID
}

// upgradedInPlace reports whether a config that configs lists upgrades sts in place: its targetRef
// names it, its strategy is InPlace, and it is not being deleted.
func upgradedInPlace(ctx context.Context, configs client.Reader, sts *appsv1.StatefulSet) (bool, error) {
	var list v1alpha1.RollingUpgradeConfigList
	if err := configs.List(ctx, &list, client.InNamespace(sts.Namespace)); err != nil {
		return false, err
	}
	for i := range list.Items {
		c := &list.Items[i]
		if c.Spec.TargetRef.Kind == v1alpha1.KindStatefulSet && c.Spec.TargetRef.Name == sts.Name &&
			c.Spec.InPlace() != nil && c.DeletionTimestamp == nil {
			return true, nil
		}
	}
	return false, nil
}

// SetupWithManager reconciles every StatefulSet the cache sees change.
func (r *GateReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("readinessgate").
		For(&appsv1.StatefulSet{}).
		Complete(r)
}

package gitwriteback

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"k8s.io/apimachinery/pkg/api/equality"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/text"
)

// StatusReconciler writes each GitWriteBack's status from the configs that name it: whether their
// writes land, the newest commit and error, and who they are. A broken credential then shows on
// the GitWriteBack once, not only on each of its configs.
type StatusReconciler struct {
	Client client.Client
	// Configs lists the configs of a namespace: the cache, or, for a manager that serves one shard,
	// the API server, since the GitWriteBack's configs may be served by others.
	Configs client.Reader
	Clock   clock.PassiveClock
	// Resync is how often it looks again without a change it sees; zero: only on changes.
	Resync time.Duration
}

// Reconcile gathers the status and patches it when it changed.
func (r *StatusReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var gwb v1alpha1.GitWriteBack
	if err := r.Client.Get(ctx, req.NamespacedName, &gwb); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	var list v1alpha1.RollingUpgradeConfigList
	if err := r.Configs.List(ctx, &list, client.InNamespace(gwb.Namespace)); err != nil {
		return ctrl.Result{}, err
	}
	st := Summary(&gwb, list.Items, r.Clock.Now())
	if equality.Semantic.DeepEqual(st, gwb.Status) {
		return ctrl.Result{RequeueAfter: r.Resync}, nil
	}
	before := gwb.DeepCopy()
	gwb.Status = st
	err := r.Client.Status().Patch(ctx, &gwb, client.MergeFrom(before), client.FieldOwner(v1alpha1.FieldManager))
	return ctrl.Result{RequeueAfter: r.Resync}, client.IgnoreNotFound(err)
}

// Summary is the status of gwb that its configs' status says.
func Summary(gwb *v1alpha1.GitWriteBack, configs []v1alpha1.RollingUpgradeConfig, now time.Time) v1alpha1.WriteBackStatus {
	st := v1alpha1.WriteBackStatus{ObservedGeneration: gwb.Generation, Conditions: slices.Clone(gwb.Status.Conditions)}
	var newestError *metav1.Condition
	var errorOf string
	for i := range configs {
		c := &configs[i]
		if ref := c.Spec.GitWriteBack; ref == nil || ref.Name != gwb.Name || c.Namespace != gwb.Namespace {
			continue
		}
		st.ConfigCount++
		st.Configs = append(st.Configs, c.Name)
		if w := c.Status.GitWriteBack; w != nil && w.LastWrite != nil && (st.LastWrite == nil || w.LastWrite.After(st.LastWrite.Time)) {
			st.LastWrite = w.LastWrite.DeepCopy()
			if w.Commit != "" {
				st.LastCommit = w.Commit
			}
		}
		if cond := apimeta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionGitWriteBack); cond != nil && cond.Status == metav1.ConditionFalse {
			st.FailingCount++
			if newestError == nil || cond.LastTransitionTime.After(newestError.LastTransitionTime.Time) {
				newestError, errorOf = cond, c.Name
			}
		}
	}
	slices.Sort(st.Configs)
	st.Configs = st.Configs[:min(len(st.Configs), v1alpha1.MaxListedConfigs)]
	ready := metav1.Condition{Type: meta.ReadyCondition, Status: metav1.ConditionTrue, ObservedGeneration: gwb.Generation,
		LastTransitionTime: metav1.NewTime(now)}
	switch {
	case st.ConfigCount == 0:
		ready.Reason, ready.Message = v1alpha1.ReasonUnused, "no RollingUpgradeConfig names it"
	case newestError != nil:
		st.LastError = text.Cut(errorOf+": "+newestError.Message, 4096, "…")
		ready.Status, ready.Reason = metav1.ConditionFalse, v1alpha1.EventGitWriteBackFailed
		ready.Message = text.Cut(fmt.Sprintf("%d of %d configs cannot write; the newest error: %s", st.FailingCount, st.ConfigCount, st.LastError), 32768, "…")
	default:
		ready.Reason = v1alpha1.ReasonWritten
		ready.Message = fmt.Sprintf("%d configs write through it; none fails", st.ConfigCount)
		if st.LastCommit != "" {
			ready.Message += "; last commit " + st.LastCommit
		}
	}
	apimeta.SetStatusCondition(&st.Conditions, ready)
	return st
}

// SetupWithManager reconciles a GitWriteBack when it changes, and when a config that names it (or
// named it) comes, goes, or changes what its summary reads: not at each of the config's status
// writes.
func (r *StatusReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("gitwriteback-status").
		For(&v1alpha1.GitWriteBack{}).
		Watches(&v1alpha1.RollingUpgradeConfig{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []ctrl.Request {
			ref := o.(*v1alpha1.RollingUpgradeConfig).Spec.GitWriteBack
			if ref == nil {
				return nil
			}
			return []ctrl.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: ref.Name}}}
		}), builder.WithPredicates(predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
			return summarized(e.ObjectOld.(*v1alpha1.RollingUpgradeConfig)) != summarized(e.ObjectNew.(*v1alpha1.RollingUpgradeConfig))
		}})).
		Complete(r)
}

// summarized is what Summary reads of a config.
func summarized(c *v1alpha1.RollingUpgradeConfig) string {
	s := ""
	if ref := c.Spec.GitWriteBack; ref != nil {
		s = ref.Name
	}
	if w := c.Status.GitWriteBack; w != nil {
		s += "|" + w.Commit
		if w.LastWrite != nil {
			s += "|" + w.LastWrite.UTC().String()
		}
	}
	if cond := apimeta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionGitWriteBack); cond != nil {
		s += "|" + string(cond.Status) + "|" + cond.Message
	}
	return s
}

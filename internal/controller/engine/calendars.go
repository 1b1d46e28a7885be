package engine

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/kube"
	"github.com/rollgate/rollgate/internal/rollout"
)

// calendarsFor are the RolloutCalendars (read from c, the cache) whose selectors pick ruc. The
// namespace's labels are read from live, uncached, and only when a calendar selects namespaces
// by them: the manager caches no namespaces.
func calendarsFor(ctx context.Context, c, live client.Reader, ruc *v1alpha1.RollingUpgradeConfig) ([]*v1alpha1.RolloutCalendar, error) {
	var list v1alpha1.RolloutCalendarList
	if err := c.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("listing RolloutCalendars: %w", err)
	}
	var nsLabels labels.Set
	nsRead := false
	var out []*v1alpha1.RolloutCalendar
	for i := range list.Items {
		cal := &list.Items[i]
		if cal.Spec.NamespaceSelector != nil && !nsRead {
			var ns corev1.Namespace
			if err := live.Get(ctx, client.ObjectKey{Name: ruc.Namespace}, &ns); err != nil {
				return nil, fmt.Errorf("reading the labels of namespace %s for RolloutCalendar %s: %w", ruc.Namespace, cal.Name, err)
			}
			nsLabels, nsRead = labels.Set(ns.Labels), true
		}
		if picks(cal, nsLabels, labels.Set(ruc.Labels)) {
			out = append(out, cal)
		}
	}
	return out, nil
}

// picks: the calendar's selectors match the namespace's and the config's labels. A selector that
// does not parse (admission keeps them out) picks every config: a calendar holds starts back, and
// one that picked none would let them go while the admin thinks them frozen.
func picks(cal *v1alpha1.RolloutCalendar, nsLabels, configLabels labels.Set) bool {
	match := func(sel *metav1.LabelSelector, set labels.Set) bool {
		if sel == nil {
			return true
		}
		s, err := metav1.LabelSelectorAsSelector(sel)
		return err != nil || s.Matches(set)
	}
	return match(cal.Spec.NamespaceSelector, nsLabels) && match(cal.Spec.Selector, configLabels)
}

// byCalendar wakes configs on a change of a RolloutCalendar: all of them when it comes, goes or
// its spec changes (its selectors may have picked a config before the change and not after), and
// those waiting for one of its slots (their status.hold names it) when one is given back. Its
// other status changes wake none.
func byCalendar(c client.Reader) handler.EventHandler {
	enqueue := func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request], waiting string) {
		var list v1alpha1.RollingUpgradeConfigList
		if err := c.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "listing configs for a RolloutCalendar event")
			return
		}
		if waiting != "" {
			list.Items = slices.DeleteFunc(list.Items, func(ruc v1alpha1.RollingUpgradeConfig) bool {
				return !rollout.WaitsForSlotOf(&ruc.Status, waiting)
			})
		}
		for _, req := range kube.RequestsOf(&list) {
			q.Add(req)
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, _ event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, q, "")
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			before, after := e.ObjectOld.(*v1alpha1.RolloutCalendar), e.ObjectNew.(*v1alpha1.RolloutCalendar)
			switch {
			case before.Generation != after.Generation:
				enqueue(ctx, q, "")
			case len(after.Status.Rollouts) < len(before.Status.Rollouts):
				enqueue(ctx, q, after.Name)
			}
		},
		DeleteFunc: func(ctx context.Context, _ event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, q, "")
		},
	}
}

package engine

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/kube/kubetest"
)

// A RolloutCalendar picks configs by their namespace's labels and their own; a calendar without
// selectors picks every config. The namespace is read only when a calendar selects by it.
func TestCalendarsPickConfigs(t *testing.T) {
	freeze := []v1alpha1.CalendarWindow{{Name: "x", Type: v1alpha1.WindowDeny, Start: &metav1.Time{Time: time.Now()}, End: &metav1.Time{Time: time.Now().Add(time.Hour)}}}
	cal := func(name string, ns, cfg map[string]string) *v1alpha1.RolloutCalendar {
		c := &v1alpha1.RolloutCalendar{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.RolloutCalendarSpec{Windows: freeze}}
		if ns != nil {
			c.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: ns}
		}
		if cfg != nil {
			c.Spec.Selector = &metav1.LabelSelector{MatchLabels: cfg}
		}
		return c
	}
	prod := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop", Labels: map[string]string{"env": "prod"}}}
	c := fake.NewClientBuilder().WithScheme(kubetest.NewScheme(t)).WithObjects(prod,
		cal("everything", nil, nil), cal("prod", map[string]string{"env": "prod"}, nil), cal("staging", map[string]string{"env": "staging"}, nil),
		cal("payments", nil, map[string]string{"team": "payments"}), cal("prod-payments", map[string]string{"env": "prod"}, map[string]string{"team": "payments"}),
	).Build()
	for _, tc := range []struct {
		labels map[string]string
		want   []string
	}{
		{labels: nil, want: []string{"everything", "prod"}},
		{labels: map[string]string{"team": "payments"}, want: []string{"everything", "payments", "prod", "prod-payments"}},
	} {
		ruc := &v1alpha1.RollingUpgradeConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", Labels: tc.labels}}
		got, err := calendarsFor(context.Background(), c, c, ruc)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, g := range got {
			names = append(names, g.Name)
		}
		slices.Sort(names)
		if !slices.Equal(names, tc.want) {
			t.Errorf("labels %v: calendars %v, want %v", tc.labels, names, tc.want)
		}
	}
	// Without a calendar that selects namespaces, the namespace is not read.
	only := fake.NewClientBuilder().WithScheme(kubetest.NewScheme(t)).WithObjects(cal("payments", nil, map[string]string{"team": "payments"})).Build()
	noNamespaces := fake.NewClientBuilder().WithScheme(kubetest.NewScheme(t)).Build()
	if _, err := calendarsFor(context.Background(), only, noNamespaces, &v1alpha1.RollingUpgradeConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "gone", Name: "web"}}); err != nil {
		t.Errorf("the namespace was read: %v", err)
	}
	// A namespace that cannot be read is an error (retried), never a calendar silently dropped.
	withNs := fake.NewClientBuilder().WithScheme(kubetest.NewScheme(t)).WithObjects(cal("prod", map[string]string{"env": "prod"}, nil)).Build()
	if _, err := calendarsFor(context.Background(), withNs, noNamespaces, &v1alpha1.RollingUpgradeConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "gone", Name: "web"}}); err == nil {
		t.Error("an unreadable namespace gave no error")
	}
}

// gets counts the Gets a reader serves.
type gets struct {
	client.Reader
	n int
}

func (g *gets) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	g.n++
	return g.Reader.Get(ctx, key, obj, opts...)
}

// The namespace is read once per look, however many calendars select namespaces, also when it
// has no labels at all.
func TestTheNamespaceIsReadOnce(t *testing.T) {
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}
	freeze := []v1alpha1.CalendarWindow{{Name: "x", Type: v1alpha1.WindowDeny, Start: &metav1.Time{Time: time.Now()}, End: &metav1.Time{Time: time.Now().Add(time.Hour)}}}
	var objs []client.Object
	for _, name := range []string{"a", "b", "c"} {
		objs = append(objs, &v1alpha1.RolloutCalendar{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.RolloutCalendarSpec{NamespaceSelector: sel, Windows: freeze}})
	}
	c := fake.NewClientBuilder().WithScheme(kubetest.NewScheme(t)).WithObjects(append(objs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bare"}})...).Build()
	live := &gets{Reader: c}
	got, err := calendarsFor(context.Background(), c, live, &v1alpha1.RollingUpgradeConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "bare", Name: "web"}})
	if err != nil || len(got) != 0 || live.n != 1 {
		t.Errorf("calendars %d, err %v, %d reads of the namespace; want none picked and one read", len(got), err, live.n)
	}
}

// A RolloutCalendar's change wakes every config when its spec changes, and, when one of its slots
// is given back, only the configs waiting for a slot of that calendar.
func TestAFreedSlotWakesItsWaiters(t *testing.T) {
	waiting := func(name, calendar string) *v1alpha1.RollingUpgradeConfig {
		c := &v1alpha1.RollingUpgradeConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name}}
		c.Status.Phase = v1alpha1.PhasePending
		c.Status.Hold = &v1alpha1.Hold{Gate: v1alpha1.GateRolloutSlot, Reason: v1alpha1.ReasonAwaitingRolloutSlot, Calendars: []string{calendar},
			Message: "1.1.0 waits for a rollout slot: RolloutCalendar " + calendar + " allows 1 rollouts at once"}
		return c
	}
	c := fake.NewClientBuilder().WithScheme(kubetest.NewScheme(t)).WithObjects(waiting("a", "waves"), waiting("b", "waves-2"),
		&v1alpha1.RollingUpgradeConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "idle"}}).Build()
	slot := v1alpha1.CalendarRollout{Namespace: "shop", Name: "x", Version: "1.0.0"}
	before := &v1alpha1.RolloutCalendar{ObjectMeta: metav1.ObjectMeta{Name: "waves", Generation: 1}, Status: v1alpha1.RolloutCalendarStatus{Rollouts: []v1alpha1.CalendarRollout{slot}}}
	woken := func(after *v1alpha1.RolloutCalendar) []string {
		q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
		defer q.ShutDown()
		byCalendar(c).Update(context.Background(), event.UpdateEvent{ObjectOld: before, ObjectNew: after}, q)
		var names []string
		for q.Len() > 0 {
			r, _ := q.Get()
			names = append(names, r.Name)
			q.Done(r)
		}
		slices.Sort(names)
		return names
	}
	freed := before.DeepCopy()
	freed.Status.Rollouts = nil
	if got := woken(freed); !slices.Equal(got, []string{"a"}) {
		t.Errorf("a slot of waves given back woke %v, want a alone", got)
	}
	opened := before.DeepCopy()
	opened.Status.Open = true
	if got := woken(opened); len(got) != 0 {
		t.Errorf("a status change without a slot given back woke %v", got)
	}
	changed := before.DeepCopy()
	changed.Generation = 2
	if got := woken(changed); !slices.Equal(got, []string{"a", "b", "idle"}) {
		t.Errorf("a spec change woke %v, want every config", got)
	}
}

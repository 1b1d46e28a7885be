package controllers

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/rollgate/rollgate/api/v1alpha1"
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
	c := fake.NewClientBuilder().WithScheme(newScheme(t)).WithObjects(prod,
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
	only := fake.NewClientBuilder().WithScheme(newScheme(t)).WithObjects(cal("payments", nil, map[string]string{"team": "payments"})).Build()
	noNamespaces := fake.NewClientBuilder().WithScheme(newScheme(t)).Build()
	if _, err := calendarsFor(context.Background(), only, noNamespaces, &v1alpha1.RollingUpgradeConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "gone", Name: "web"}}); err != nil {
		t.Errorf("the namespace was read: %v", err)
	}
	// A namespace that cannot be read is an error (retried), never a calendar silently dropped.
	withNs := fake.NewClientBuilder().WithScheme(newScheme(t)).WithObjects(cal("prod", map[string]string{"env": "prod"}, nil)).Build()
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
	c := fake.NewClientBuilder().WithScheme(newScheme(t)).WithObjects(append(objs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bare"}})...).Build()
	live := &gets{Reader: c}
	got, err := calendarsFor(context.Background(), c, live, &v1alpha1.RollingUpgradeConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "bare", Name: "web"}})
	if err != nil || len(got) != 0 || live.n != 1 {
		t.Errorf("calendars %d, err %v, %d reads of the namespace; want none picked and one read", len(got), err, live.n)
	}
}

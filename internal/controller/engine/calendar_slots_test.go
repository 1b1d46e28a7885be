package engine

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/kube/kubetest"
	"github.com/rollgate/rollgate/internal/rollout"
)

// Two configs that read the same calendar (the same cached copy, so both see its one slot free)
// cannot both take it: the second write conflicts, is read afresh and refused. The slot is given
// back by its holder, and is never taken from a rollout in flight that this manager's cache does
// not hold (another shard's).
func TestTheLastSlotIsTakenOnce(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	one := int32(1)
	cal := &v1alpha1.RolloutCalendar{ObjectMeta: metav1.ObjectMeta{Name: "waves"}, Spec: v1alpha1.RolloutCalendarSpec{MaxConcurrent: &one}}
	ruc := func(name string, annotations map[string]string) *v1alpha1.RollingUpgradeConfig {
		return &v1alpha1.RollingUpgradeConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, Annotations: annotations}}
	}
	elsewhere := ruc("elsewhere", map[string]string{v1alpha1.UpdatePhaseAnnotation: rollout.StepHealthCheck})
	c := fake.NewClientBuilder().WithScheme(kubetest.NewScheme(t)).WithStatusSubresource(&v1alpha1.RolloutCalendar{}).
		WithObjects(cal, ruc("a", nil), ruc("b", nil), elsewhere).Build()
	r := &RollingUpgradeConfigReconciler{Client: kubetest.ShardCache{Client: c, Foreign: "elsewhere"}, APIReader: c, Calendars: true,
		Clock: clocktesting.NewFakePassiveClock(now)}
	var cached v1alpha1.RolloutCalendar
	if err := c.Get(ctx, client.ObjectKeyFromObject(cal), &cached); err != nil {
		t.Fatal(err)
	}
	claim := func(name string, at time.Time) rollout.SlotAnswer {
		t.Helper()
		in := rollout.Input{Now: at, Config: ruc(name, nil), Calendars: []*v1alpha1.RolloutCalendar{&cached}}
		return r.claimSlots(ctx, in, "1.1.0")["waves"]
	}
	if a := claim("a", now); !a.Granted {
		t.Fatalf("a, first: %+v", a)
	}
	if b := claim("b", now); b.Granted || len(b.Holders) != 1 || b.Holders[0] != "shop/a (1.1.0)" || b.Problem != "" {
		t.Errorf("b, with the stale copy: %+v; want refused, a named", b)
	}
	if err := r.releaseSlots(ctx, ruc("a", nil)); err != nil {
		t.Fatal(err)
	}
	if b := claim("b", now); !b.Granted {
		t.Errorf("b, after a gave its slot back: %+v", b)
	}

	// A slot held by a config of another shard, in flight, counts even past the grace.
	if err := r.releaseSlots(ctx, ruc("b", nil)); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(cal), &cached); err != nil {
		t.Fatal(err)
	}
	cached.Status.Rollouts = []v1alpha1.CalendarRollout{{Namespace: "shop", Name: "elsewhere", Version: "3.0.0", Since: metav1.NewTime(now.Add(-5 * time.Minute))}}
	if err := c.Status().Update(ctx, &cached); err != nil {
		t.Fatal(err)
	}
	if a := claim("a", now); a.Granted {
		t.Errorf("a, while another shard's rollout holds the slot: %+v; want refused", a)
	}
}

// A config picked by two capped calendars takes a slot of both or of neither: a slot it took of
// the first is given back when the second refuses, so that no config holds a slot it cannot use
// while another that could waits.
func TestSlotsAreTakenAllOrNone(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	one := int32(1)
	free := &v1alpha1.RolloutCalendar{ObjectMeta: metav1.ObjectMeta{Name: "a-free"}, Spec: v1alpha1.RolloutCalendarSpec{MaxConcurrent: &one}}
	full := &v1alpha1.RolloutCalendar{ObjectMeta: metav1.ObjectMeta{Name: "b-full"}, Spec: v1alpha1.RolloutCalendarSpec{MaxConcurrent: &one},
		Status: v1alpha1.RolloutCalendarStatus{Rollouts: []v1alpha1.CalendarRollout{{Namespace: "shop", Name: "api", Version: "2.0.0", Since: metav1.NewTime(now)}}}}
	api := &v1alpha1.RollingUpgradeConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "api",
		Annotations: map[string]string{v1alpha1.UpdatePhaseAnnotation: rollout.StepHealthCheck}}}
	web := &v1alpha1.RollingUpgradeConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}}
	c := fake.NewClientBuilder().WithScheme(kubetest.NewScheme(t)).WithStatusSubresource(&v1alpha1.RolloutCalendar{}).WithObjects(free, full, api, web).Build()
	r := &RollingUpgradeConfigReconciler{Client: c, APIReader: c, Calendars: true, Clock: clocktesting.NewFakePassiveClock(now)}
	var cals []*v1alpha1.RolloutCalendar
	for _, name := range []string{"b-full", "a-free"} { // claimed by name, whatever the order
		var cal v1alpha1.RolloutCalendar
		if err := c.Get(ctx, client.ObjectKey{Name: name}, &cal); err != nil {
			t.Fatal(err)
		}
		cals = append(cals, &cal)
	}
	got := r.claimSlots(ctx, rollout.Input{Now: now, Config: web, Calendars: cals}, "1.1.0")
	if !got["a-free"].Granted || got["b-full"].Granted {
		t.Fatalf("answers %+v, want a-free granted and b-full refused", got)
	}
	var after v1alpha1.RolloutCalendar
	if err := c.Get(ctx, client.ObjectKey{Name: "a-free"}, &after); err != nil {
		t.Fatal(err)
	}
	if len(after.Status.Rollouts) != 0 {
		t.Errorf("a-free holds %+v after b-full refused: want its slot given back", after.Status.Rollouts)
	}
}

// A grant is always a write with the calendar's resourceVersion, even when the config's cached
// copy shows its own slot as it would write it: here the slot went to another config in the same
// second, and the stale copy must not grant it a second time.
func TestAKeptSlotIsWrittenToo(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	one := int32(1)
	mine := []v1alpha1.CalendarRollout{{Namespace: "shop", Name: "web", Version: "1.1.0", Since: metav1.NewTime(now)}}
	cal := &v1alpha1.RolloutCalendar{ObjectMeta: metav1.ObjectMeta{Name: "waves"}, Spec: v1alpha1.RolloutCalendarSpec{MaxConcurrent: &one},
		Status: v1alpha1.RolloutCalendarStatus{Rollouts: mine}}
	api := &v1alpha1.RollingUpgradeConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "api",
		Annotations: map[string]string{v1alpha1.UpdatePhaseAnnotation: rollout.StepHealthCheck}}}
	web := &v1alpha1.RollingUpgradeConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}}
	c := fake.NewClientBuilder().WithScheme(kubetest.NewScheme(t)).WithStatusSubresource(&v1alpha1.RolloutCalendar{}).WithObjects(cal, api, web).Build()
	r := &RollingUpgradeConfigReconciler{Client: c, APIReader: c, Calendars: true, Clock: clocktesting.NewFakePassiveClock(now)}
	var stale v1alpha1.RolloutCalendar
	if err := c.Get(ctx, client.ObjectKey{Name: "waves"}, &stale); err != nil {
		t.Fatal(err)
	}
	var current v1alpha1.RolloutCalendar
	if err := c.Get(ctx, client.ObjectKey{Name: "waves"}, &current); err != nil {
		t.Fatal(err)
	}
	current.Status.Rollouts = []v1alpha1.CalendarRollout{{Namespace: "shop", Name: "api", Version: "2.0.0", Since: metav1.NewTime(now)}}
	if err := c.Status().Update(ctx, &current); err != nil {
		t.Fatal(err)
	}
	a := r.claimSlots(ctx, rollout.Input{Now: now, Config: web, Calendars: []*v1alpha1.RolloutCalendar{&stale}}, "1.1.0")["waves"]
	if a.Granted || len(a.Holders) != 1 || a.Holders[0] != "shop/api (2.0.0)" {
		t.Errorf("web with a stale copy of its own slot: %+v; want refused, api named", a)
	}
}

// A slot is stamped when it is written, not at the start of the reconcile that claims it (which
// may have waited for a registry or Prometheus since): its grace runs from the write.
func TestASlotIsStampedWhenWritten(t *testing.T) {
	ctx := context.Background()
	start := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	one := int32(1)
	cal := &v1alpha1.RolloutCalendar{ObjectMeta: metav1.ObjectMeta{Name: "waves"}, Spec: v1alpha1.RolloutCalendarSpec{MaxConcurrent: &one}}
	web := &v1alpha1.RollingUpgradeConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}}
	c := fake.NewClientBuilder().WithScheme(kubetest.NewScheme(t)).WithStatusSubresource(&v1alpha1.RolloutCalendar{}).WithObjects(cal, web).Build()
	r := &RollingUpgradeConfigReconciler{Client: c, APIReader: c, Calendars: true, Clock: clocktesting.NewFakePassiveClock(start.Add(30 * time.Second))}
	if a := r.claimSlots(ctx, rollout.Input{Now: start, Config: web, Calendars: []*v1alpha1.RolloutCalendar{cal}}, "1.1.0")["waves"]; !a.Granted {
		t.Fatalf("a free slot: %+v", a)
	}
	var got v1alpha1.RolloutCalendar
	if err := c.Get(ctx, client.ObjectKey{Name: "waves"}, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Status.Rollouts) != 1 || !got.Status.Rollouts[0].Since.Time.Equal(start.Add(30*time.Second)) {
		t.Errorf("slots %+v; want web's, since the write (%s)", got.Status.Rollouts, start.Add(30*time.Second))
	}
}

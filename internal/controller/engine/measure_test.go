package engine

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/health"
	"github.com/rollgate/rollgate/internal/kube"
	"github.com/rollgate/rollgate/internal/rollout"
)

// queries answers each query it is asked from its map, recording what it was asked. With
// together > 0 no query is answered before that many are asked: a caller that asks one at a time
// gets errors.
type queries struct {
	answers  map[string]float64
	together int

	mu    sync.Mutex
	asked []string
	all   chan struct{}
}

func (q *queries) Series(context.Context, string, time.Time) (int, error) {
	return 0, errors.New("not asked")
}

func (q *queries) Query(_ context.Context, query string, _ time.Time) (float64, error) {
	q.mu.Lock()
	q.asked = append(q.asked, query)
	if len(q.asked) == q.together {
		close(q.all)
	}
	q.mu.Unlock()
	if q.together > 0 {
		select {
		case <-q.all:
		case <-time.After(5 * time.Second):
			return 0, errors.New("asked one at a time")
		}
	}
	if v, ok := q.answers[query]; ok {
		return v, nil
	}
	return 0, errors.New("no such series")
}

// The controller measures the checks that are due, with the query filled in, and turns every
// failure to measure into an error the decision counts.
func TestMeasure(t *testing.T) {
	now := time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)
	ruc := &v1alpha1.RollingUpgradeConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", Annotations: map[string]string{
			v1alpha1.TargetImageAnnotation: "r/web:1.4.0", v1alpha1.UpdatePhaseAnnotation: "HealthCheck",
			v1alpha1.UpdateStartedAnnotation: now.Add(-time.Minute).Format(time.RFC3339)}},
		Spec: v1alpha1.RollingUpgradeConfigSpec{TargetRef: v1alpha1.WorkloadReference{Kind: v1alpha1.KindDeployment, Name: "web"},
			Analysis: &v1alpha1.Analysis{Metrics: []v1alpha1.MetricCheck{
				{Name: "errors", Query: `errors{ns="{{.Namespace}}",v="{{.Version}}",was="{{.OldVersion}}",c="{{.Container}}"}`,
					SuccessCondition: v1alpha1.MetricRange{Max: ptr.To("0")}},
				{Name: "latency", Query: `latency{v="{{.Version}}"}`, SuccessCondition: v1alpha1.MetricRange{Max: ptr.To("1")}},
				{Name: "later", Query: `x`, InitialDelay: &metav1.Duration{Duration: time.Hour}, SuccessCondition: v1alpha1.MetricRange{Max: ptr.To("1")}},
			}}},
		Status: v1alpha1.RollingUpgradeConfigStatus{CurrentVersion: "1.3.0"},
	}
	// The two due checks are asked at once: a Prometheus that does not answer holds the
	// reconcile for one timeout, not one per check.
	q := &queries{answers: map[string]float64{`errors{ns="shop",v="1.4.0",was="1.3.0",c="app"}`: 0}, together: 2, all: make(chan struct{})}
	w := &rollout.Workload{Image: "r/web:1.4.0", Container: "app", Verdict: health.Verdict{State: health.Progressing}}
	got := measure(context.Background(), q, nil, ruc, w, now)
	if len(got) != 2 || got["errors"].Err != "" || got["latency"].Err != "no such series" {
		t.Errorf("measurements %+v (asked %q), want errors measured, latency an error, later not due", got, q.asked)
	}
	if got := measure(context.Background(), nil, nil, ruc, w, now); got["errors"].Err != errNoPrometheus {
		t.Errorf("without a Prometheus: %+v", got)
	}
	ruc.Annotations[v1alpha1.UpdatePhaseAnnotation] = ""
	if got := measure(context.Background(), q, nil, ruc, w, now); got != nil {
		t.Errorf("idle: measured %+v", got)
	}

	// With every slot taken (other configs wait for Prometheus), the checks are answered at once
	// with an error, not queried.
	ruc.Annotations[v1alpha1.UpdatePhaseAnnotation] = "HealthCheck"
	slots := NewWaitSlots(3)
	if !slots.take() || slots.take() {
		t.Fatal("3 workers: want one slot")
	}
	asked := len(q.asked)
	if got := measure(context.Background(), q, slots, ruc, w, now); got["errors"].Err != errBusy || len(q.asked) != asked {
		t.Errorf("no slot free: %+v, %d queries sent", got, len(q.asked)-asked)
	}
	slots.give()
	q.together = 0
	if got := measure(context.Background(), q, slots, ruc, w, now); got["errors"].Err != "" || len(slots) != 0 {
		t.Errorf("a slot free: %+v, %d slots left taken", got, len(slots))
	}
}

// Image look-ups and freeze queries wait for a slot as measurements do: with every slot taken
// they are answered at once, with the reason, and neither registry nor Prometheus is asked.
func TestLookUpsAndFreezesTakeAWaitSlot(t *testing.T) {
	q := &queries{}
	r := &RollingUpgradeConfigReconciler{Waits: NewWaitSlots(1), Metrics: q}
	if !r.Waits.take() {
		t.Fatal("no slot")
	}
	ops := &v1alpha1.RolloutCalendar{ObjectMeta: metav1.ObjectMeta{Name: "ops"},
		Spec: v1alpha1.RolloutCalendarSpec{FreezeWhile: []v1alpha1.FreezeQuery{{Name: "sev1", Query: "ALERTS"}}}}
	in := rollout.Input{Now: time.Now(), Config: &v1alpha1.RollingUpgradeConfig{}, Calendars: []*v1alpha1.RolloutCalendar{ops}}
	if got := r.askFreezes(context.Background(), in)["ops/sev1"]; !strings.Contains(got.Problem, allWaiting) {
		t.Errorf("freeze answered %+v, want the busy reason", got)
	}
	if got := r.lookUp(context.Background(), in, &kube.Workload{}, "r/web:1.1.0"); !strings.Contains(got.Problem, allWaiting) {
		t.Errorf("look-up answered %+v, want the busy reason", got)
	}
	if len(q.asked) != 0 || len(r.Waits) != 1 {
		t.Errorf("%d queries sent, %d slots taken; want none sent and only the test's slot", len(q.asked), len(r.Waits))
	}
}

// A decision's questions are answered one at a time, in the order it asked them: a claim of
// calendar slots, a write, waits for the decision made with the answers before it.
func TestQuestionsAreAnsweredOneAtATime(t *testing.T) {
	r := &RollingUpgradeConfigReconciler{Waits: NewWaitSlots(2)}
	in := rollout.Input{Now: time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC), Config: &v1alpha1.RollingUpgradeConfig{}}
	asked := []rollout.Question{rollout.Freezes{}, rollout.Slots{Tag: "1.1.0"}}
	if !r.answer(context.Background(), &in, nil, asked) || in.Freezes == nil || in.Slots != nil {
		t.Fatalf("first answer: freezes %v, slots %v; want the freezes alone", in.Freezes, in.Slots)
	}
	if !r.answer(context.Background(), &in, nil, asked) || in.Slots == nil {
		t.Fatalf("second answer: slots %v, want them claimed", in.Slots)
	}
	if r.answer(context.Background(), &in, nil, asked) {
		t.Error("third answer: all was answered, yet something was asked again")
	}
}

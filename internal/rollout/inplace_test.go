package rollout

import (
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/health"
	"github.com/rollgate/rollgate/internal/inplace"
)

func inPlaceConfig(c *v1alpha1.RollingUpgradeConfig) {
	c.Spec.TargetRef = v1alpha1.WorkloadReference{Kind: v1alpha1.KindStatefulSet, Name: "web"}
	c.Spec.Strategy = &v1alpha1.UpgradeStrategy{Type: v1alpha1.StrategyInPlace}
}

// The progress of an in-place upgrade goes into status.inPlace as the pods show it, whole
// seconds only (a look that finds the same pods writes nothing); a pod rollgate changed that
// comes through is announced once, with its time, and one that fails once; the config looks
// again when the plan asks.
func TestInPlaceProgressIsRecorded(t *testing.T) {
	cfg := config(current("1.0.0"), inPlaceConfig, inFlight(StepHealthCheck, repo+":1.1.0", now.Add(-time.Minute)))
	plan := func(states ...inplace.Progress) *inplace.Plan {
		return &inplace.Plan{Image: repo + ":1.1.0", Verdict: health.Verdict{State: health.Progressing}, Pods: states, Next: inplace.Poll}
	}
	decide := func(cfg *v1alpha1.RollingUpgradeConfig, p *inplace.Plan) Decision {
		w := &Workload{Description: "StatefulSet web", Image: repo + ":1.1.0", Verdict: p.Verdict, InPlace: p}
		return Decide(Input{Now: now, Config: cfg, Workload: w})
	}
	changing := inplace.Progress{Name: "web-1", State: inplace.StateChanging, Since: now.Add(-1500 * time.Millisecond), Changed: true}
	d := decide(cfg, plan(changing, inplace.Progress{Name: "web-0", State: inplace.StateWaiting}))
	st := d.Status.InPlace
	if st == nil || st.Image != repo+":1.1.0" || st.Started == nil || !st.Started.Time.Equal(now.Add(-time.Minute)) || len(st.Pods) != 2 ||
		st.Pods[0].State != "Changing" || !st.Pods[0].Since.Time.Equal(now.Add(-2*time.Second)) ||
		st.Pods[1].Since != nil || len(d.Events) != 0 || d.RequeueAfter != inplace.Poll {
		t.Fatalf("status.inPlace %+v, events %s, next look %s", st, reasons(d.Events), d.RequeueAfter)
	}
	cfg = next(cfg, d)
	if again := decide(cfg, plan(changing, inplace.Progress{Name: "web-0", State: inplace.StateWaiting})); !apiequality(again.Status, cfg.Status) {
		t.Error("the same pods changed the status")
	}
	done := inplace.Progress{Name: "web-1", State: inplace.StateDone, Since: now, Changed: true, Upgraded: true, Took: 1200 * time.Millisecond}
	d = decide(cfg, plan(done, inplace.Progress{Name: "web-0", State: inplace.StateDraining, Since: now}))
	if reasons(d.Events) != v1alpha1.EventPodUpgraded || d.Events[0].Message != "web-1 runs "+repo+":1.1.0 in place: ready 1.2s after its image changed" ||
		len(d.PodUpgrades) != 1 || d.PodUpgrades[0] != 1200*time.Millisecond {
		t.Errorf("web-1 through: events %+v, pod times %v", d.Events, d.PodUpgrades)
	}
	cfg = next(cfg, d)
	if again := decide(cfg, plan(done, inplace.Progress{Name: "web-0", State: inplace.StateDraining, Since: now})); len(again.Events) != 0 {
		t.Errorf("web-1 announced again: %s", reasons(again.Events))
	}
	// Through, then not ready for a while, then ready again: announced once only.
	blip := inplace.Progress{Name: "web-1", State: inplace.StateChanging, Since: now, Changed: true, Upgraded: true}
	if again := decide(next(cfg, decide(cfg, plan(blip))), plan(done)); len(again.Events) != 0 {
		t.Errorf("web-1 announced again after a blip: %s", reasons(again.Events))
	}
	failed := inplace.Progress{Name: "web-0", State: inplace.StateFailed, Since: now, Changed: true}
	d = decide(cfg, &inplace.Plan{Image: repo + ":1.1.0", Verdict: health.Verdict{State: health.Failed, Message: "web-0 is not ready"}, Pods: []inplace.Progress{done, failed}})
	if reasons(d.Events) != "UpdateRollback,PodUpgradeFailed" || d.Outcome != OutcomeFailed {
		t.Errorf("web-0 failed: events %s, outcome %q; want its failure announced and the version rolled back", reasons(d.Events), d.Outcome)
	}
	// Both name the version that failed, though the rollback has cleared it from the status.
	for _, e := range d.Events {
		if e.Version != "1.1.0" {
			t.Errorf("%s is about %q, want 1.1.0", e.Reason, e.Version)
		}
	}
	// A record of another image's upgrade is not this one's: a pod through both is announced again.
	other := config(current("1.0.0"), inPlaceConfig, inFlight(StepHealthCheck, repo+":1.1.0", now.Add(-time.Minute)))
	other.Status.InPlace = &v1alpha1.InPlaceStatus{Image: repo + ":1.0.5", Pods: []v1alpha1.InPlacePod{{Name: "web-1", State: "Done", Upgraded: true}}}
	if d := decide(other, plan(done)); reasons(d.Events) != v1alpha1.EventPodUpgraded {
		t.Errorf("web-1 through 1.0.5 before, 1.1.0 now: events %s, want it announced", reasons(d.Events))
	}
	// A pod the StatefulSet created on the image was not changed in place: no event.
	created := inplace.Progress{Name: "web-1", State: inplace.StateDone, Since: now, Upgraded: true}
	fresh := config(current("1.0.0"), inPlaceConfig)
	fresh.Status.InPlace = &v1alpha1.InPlaceStatus{Image: repo + ":1.1.0", Pods: []v1alpha1.InPlacePod{{Name: "web-1", State: "Changing"}}}
	if d := decide(fresh, plan(created)); len(d.Events) != 0 {
		t.Errorf("a pod created on the image: events %s", reasons(d.Events))
	}
	// Without the strategy, no in-place status.
	plain := config(current("1.0.0"))
	plain.Status.InPlace = fresh.Status.InPlace
	if d := Decide(Input{Now: now, Config: plain, Workload: deploymentAt("1.0.0", healthy)}); d.Status.InPlace != nil {
		t.Errorf("strategy RollingUpdate kept %+v", d.Status.InPlace)
	}
}

// Past the health timeout an in-place upgrade fails on its own pods only: a pod changed to the
// version that is not ready (it came through, then crashed) fails it; a slow upgrade of many pods
// is no failure.
func TestAnInPlaceCheckPastItsDeadline(t *testing.T) {
	cfg := config(current("1.0.0"), inPlaceConfig, inFlight(StepHealthCheck, repo+":1.1.0", now.Add(-time.Hour)))
	for _, unready := range []bool{false, true} {
		p := &inplace.Plan{Image: repo + ":1.1.0", Verdict: health.Verdict{State: health.Progressing, Message: "2/5 pods"}, Unready: unready}
		w := &Workload{Description: "StatefulSet web", Image: repo + ":1.1.0", Verdict: p.Verdict, InPlace: p}
		d := Decide(Input{Now: now, Config: cfg, Workload: w})
		if failed := d.Outcome == OutcomeFailed; failed != unready {
			t.Errorf("a changed pod unready %v: outcome %q", unready, d.Outcome)
		}
	}
}

// What holds the next pod of an in-place check (pods down that it did not take out, a
// PodDisruptionBudget) is in the Ready message while it holds, and only then.
func TestAnInPlaceHoldIsSaid(t *testing.T) {
	cfg := config(current("1.0.0"), inPlaceConfig, inFlight(StepHealthCheck, repo+":1.1.0", now.Add(-time.Minute)))
	const held = "PodDisruptionBudget db allows no disruption: web-1 waits"
	for _, tc := range []struct {
		held string
		want bool
	}{{held, true}, {"", false}} {
		p := &inplace.Plan{Image: repo + ":1.1.0", Verdict: health.Verdict{State: health.Progressing, Message: "0/2 pods"}, Held: tc.held}
		d := Decide(Input{Now: now, Config: cfg, Workload: &Workload{Description: "StatefulSet web", Image: repo + ":1.1.0", Verdict: p.Verdict, InPlace: p}})
		if r := condition(d, meta.ReadyCondition); r == nil || strings.Contains(r.Message, held) != tc.want || r.Reason != v1alpha1.ReasonProgressing {
			t.Errorf("held %q: Ready %+v", tc.held, r)
		}
	}
}

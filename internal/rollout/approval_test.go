package rollout

import (
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rollgate/rollgate/api/v1alpha1"
)

func TestNeedsApproval(t *testing.T) {
	for _, c := range []struct {
		policy            v1alpha1.ApprovalPolicy
		tagPolicy         bool // a tag policy orders the tags: there are no majors
		current, tag, ann string
		want              bool
	}{
		{"", false, "1.0.0", "2.0.0", "", false},
		{v1alpha1.ApprovalNone, false, "1.0.0", "2.0.0", "", false},
		{v1alpha1.ApprovalRequired, false, "1.0.0", "1.0.1", "", true},
		{v1alpha1.ApprovalRequired, false, "1.0.0", "1.0.1", "1.0.1", false},
		{v1alpha1.ApprovalRequired, false, "1.0.0", "1.0.2", "1.0.1", true},  // an approval of another version
		{v1alpha1.ApprovalRequired, false, "1.0.0", "v1.0.1", "1.0.1", true}, // names the tag exactly
		{v1alpha1.ApprovalMajor, false, "1.0.0", "1.9.0", "", false},
		{v1alpha1.ApprovalMajor, false, "1.0.0", "2.0.0", "", true},
		{v1alpha1.ApprovalMajor, false, "1.0.0", "2.0.0", "2.0.0", false},
		// Builds numbered 42 and 43 are no versions 42.0.0 and 43.0.0: every one waits.
		{v1alpha1.ApprovalMajor, true, "42", "43", "", true},
		{v1alpha1.ApprovalMajor, true, "2026.12.01-01", "2026.12.02-01", "", true},
		{v1alpha1.ApprovalMajor, true, "42", "43", "43", false},
		{"", true, "42", "43", "", false},
	} {
		if got := needsApproval(c.policy, !c.tagPolicy, c.current, c.tag, c.ann); got != c.want {
			t.Errorf("needsApproval(%q, %s → %s, approved %q) = %v, want %v", c.policy, c.current, c.tag, c.ann, got, c.want)
		}
	}
}

func approval(p v1alpha1.ApprovalPolicy) func(*v1alpha1.RollingUpgradeConfig) {
	return func(c *v1alpha1.RollingUpgradeConfig) { c.Spec.Approval = p }
}

func approve(cfg *v1alpha1.RollingUpgradeConfig, tag string) *v1alpha1.RollingUpgradeConfig {
	c := cfg.DeepCopy()
	c.Annotations[v1alpha1.ApproveAnnotation] = tag
	return c
}

// A version waits for its approval, says how to give it, and starts once it names that version;
// an approval of another version does nothing.
func TestAVersionWaitsForItsApproval(t *testing.T) {
	cfg := config(current("1.0.0"), approval(v1alpha1.ApprovalRequired))
	in := Input{Now: now, Config: cfg, Workload: deploymentAt("1.0.0", healthy), Candidates: av("1.1.0")}
	d := Decide(in)
	r := condition(d, meta.ReadyCondition)
	if d.Annotations.Step != StepIdle || d.Status.Phase != v1alpha1.PhasePending || d.Status.TargetVersion != "1.1.0" ||
		r == nil || r.Reason != v1alpha1.ReasonAwaitingApproval ||
		!strings.Contains(r.Message, "kubectl -n shop annotate ruc web rollgate.dev/approve=1.1.0 --overwrite") {
		t.Fatalf("not held for approval: %+v, Ready %+v", d.Status, r)
	}
	if got := reasons(d.Events); got != "VersionAvailable,ApprovalRequired" {
		t.Errorf("events = %s", got)
	}

	// Looked at again, or approved for another version: it waits, and says nothing again.
	for _, c := range []*v1alpha1.RollingUpgradeConfig{next(cfg, d), approve(next(cfg, d), "1.0.9")} {
		in.Config, in.Now = c, now.Add(time.Minute)
		again := Decide(in)
		if again.Annotations.Step != StepIdle || again.Status.Phase != v1alpha1.PhasePending || len(again.Events) != 0 {
			t.Errorf("approved %q: %+v, events %s", c.Annotations[v1alpha1.ApproveAnnotation], again.Status, reasons(again.Events))
		}
		if msg := condition(again, meta.ReadyCondition).Message; c.Annotations[v1alpha1.ApproveAnnotation] != "" && !strings.Contains(msg, "names 1.0.9, which approves no other version") {
			t.Errorf("the stale approval is not named: %s", msg)
		}
	}

	// Approved: it starts, and the start says so.
	in.Config = approve(next(cfg, d), "1.1.0")
	d = Decide(in)
	if d.Annotations.Step != StepHealthCheck || d.Annotations.TargetImage != repo+":1.1.0" || reasons(d.Events) != "UpdateStarting" ||
		!strings.Contains(d.Events[0].Message, "approved in rollgate.dev/approve") {
		t.Errorf("approved: annotations %+v, events %+v", d.Annotations, d.Events)
	}
}

// An approved version still waits for its window, and says so with the window's event.
func TestAnApprovedVersionWaitsForItsWindow(t *testing.T) {
	cfg := config(current("1.0.0"), approval(v1alpha1.ApprovalRequired), windowAt("0 3 * * *", time.Hour))
	in := Input{Now: now.Add(-30 * time.Minute), Config: cfg, Workload: deploymentAt("1.0.0", healthy), Candidates: av("1.1.0")}
	d := Decide(in)
	in.Config = approve(next(cfg, d), "1.1.0")
	d = Decide(in)
	if r := condition(d, meta.ReadyCondition); d.Status.Phase != v1alpha1.PhasePending || r.Reason != v1alpha1.EventVersionHeld || reasons(d.Events) != "VersionHeld" {
		t.Errorf("approved before the window: %+v, Ready %+v, events %s", d.Status, r, reasons(d.Events))
	}
	in.Config, in.Now = next(in.Config, d), now
	if d = Decide(in); d.Annotations.Step != StepHealthCheck {
		t.Errorf("at the window: %+v", d.Annotations)
	}
}

// Major: minor and patch versions go by themselves, a new major waits; a newer version than the
// one approved waits again.
func TestMajorVersionsWaitForApproval(t *testing.T) {
	cfg := config(current("1.0.0"), approval(v1alpha1.ApprovalMajor))
	in := Input{Now: now, Config: cfg, Workload: deploymentAt("1.0.0", healthy), Candidates: av("1.1.0")}
	if d := Decide(in); d.Annotations.Step != StepHealthCheck {
		t.Errorf("1.1.0 did not start: %+v", d.Status)
	}
	in.Candidates = av("2.0.0")
	d := Decide(in)
	if d.Status.Phase != v1alpha1.PhasePending || condition(d, meta.ReadyCondition).Reason != v1alpha1.ReasonAwaitingApproval {
		t.Fatalf("2.0.0 is not held: %+v", d.Status)
	}
	in.Config, in.Candidates = approve(next(cfg, d), "2.0.0"), av("2.0.0", "2.1.0")
	d = Decide(in)
	if d.Status.TargetVersion != "2.1.0" || d.Annotations.Step != StepIdle || !strings.Contains(reasons(d.Events), "ApprovalRequired") {
		t.Errorf("2.1.0 after the approval of 2.0.0: %+v, events %s", d.Status, reasons(d.Events))
	}
}

// What a person did needs no approval.
func TestATargetSetByHandNeedsNoApproval(t *testing.T) {
	byHand := config(current("1.0.0"), approval(v1alpha1.ApprovalRequired), func(c *v1alpha1.RollingUpgradeConfig) {
		c.Annotations[v1alpha1.TargetImageAnnotation] = repo + ":1.1.0"
	})
	if d := Decide(Input{Now: now, Config: byHand, Workload: deploymentAt("1.0.0", healthy)}); d.Annotations.Step != StepHealthCheck {
		t.Errorf("a target set by hand waits: %+v", d.Status)
	}
}

// A wait for something else in between (a registry that does not answer) is no new hold: the
// version was held all along, and its event is not sent again.
func TestAHoldInterruptedIsAnnouncedOnce(t *testing.T) {
	for _, tc := range []struct {
		name  string
		mods  []func(*v1alpha1.RollingUpgradeConfig)
		event string
	}{
		{"approval", []func(*v1alpha1.RollingUpgradeConfig){approval(v1alpha1.ApprovalRequired)}, v1alpha1.EventApprovalRequired},
		{"window", []func(*v1alpha1.RollingUpgradeConfig){windowAt("0 3 * * *", time.Hour)}, v1alpha1.EventVersionHeld},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config(append([]func(*v1alpha1.RollingUpgradeConfig){current("1.0.0")}, tc.mods...)...)
			in := Input{Now: now.Add(-30 * time.Minute), Config: cfg, Workload: deploymentAt("1.0.0", healthy), Candidates: av("1.1.0")}
			d := Decide(in)
			if !strings.Contains(reasons(d.Events), tc.event) {
				t.Fatalf("events %s, want %s", reasons(d.Events), tc.event)
			}
			down := in
			down.Config, down.Candidates = next(cfg, d), nil
			down.SourceProblem = &Problem{Reason: v1alpha1.EventRegistryUnavailable, Message: "listing tags: unreachable"}
			d = Decide(down)
			if d.Status.Phase != v1alpha1.PhasePending || condition(d, meta.ReadyCondition).Reason != v1alpha1.EventRegistryUnavailable {
				t.Fatalf("while the registry is down: %+v", d.Status)
			}
			in.Config = next(down.Config, d)
			if d = Decide(in); strings.Contains(reasons(d.Events), tc.event) || d.Status.Phase != v1alpha1.PhasePending {
				t.Errorf("back: phase %s, events %s: the hold was announced again", d.Status.Phase, reasons(d.Events))
			}
		})
	}
}

// A status written before status.hold tells its hold by Ready's reason (heldByReady): the gates
// only, the window and an approval before a start, the soak and the analysis before a verdict;
// whatever else Ready says is no gate.
func TestHoldReason(t *testing.T) {
	for _, tc := range []struct {
		phase v1alpha1.Phase
		ready string // Ready's reason
		want  string
	}{
		{phase: v1alpha1.PhasePending, ready: v1alpha1.EventVersionHeld, want: v1alpha1.EventVersionHeld},
		{phase: v1alpha1.PhasePending, ready: v1alpha1.ReasonAwaitingApproval, want: v1alpha1.ReasonAwaitingApproval},
		{phase: v1alpha1.PhasePending, ready: v1alpha1.ReasonAwaitingReleaseAge, want: v1alpha1.ReasonAwaitingReleaseAge},
		{phase: v1alpha1.PhasePending, ready: v1alpha1.ReasonImageNotFound, want: v1alpha1.ReasonImageNotFound},
		{phase: v1alpha1.PhasePending, ready: v1alpha1.ReasonFrozen, want: v1alpha1.ReasonFrozen},
		{phase: v1alpha1.PhasePending, ready: v1alpha1.ReasonStaggered, want: v1alpha1.ReasonStaggered},
		{phase: v1alpha1.PhasePending, ready: v1alpha1.ReasonAwaitingRolloutSlot, want: v1alpha1.ReasonAwaitingRolloutSlot},
		{phase: v1alpha1.PhasePending, ready: v1alpha1.EventRegistryUnavailable, want: ""},
		{phase: v1alpha1.PhaseInProgress, ready: v1alpha1.ReasonSoaking, want: v1alpha1.ReasonSoaking},
		{phase: v1alpha1.PhaseInProgress, ready: v1alpha1.ReasonAnalyzing, want: v1alpha1.ReasonAnalyzing},
		{phase: v1alpha1.PhaseInProgress, ready: v1alpha1.EventAnalysisInconclusive, want: v1alpha1.EventAnalysisInconclusive},
		{phase: v1alpha1.PhaseInProgress, ready: v1alpha1.ReasonProgressing, want: ""},
		{phase: v1alpha1.PhaseInProgress, ready: v1alpha1.EventVersionHeld, want: ""},
		{phase: v1alpha1.PhaseCompleted, ready: v1alpha1.ReasonSoaking, want: ""},
	} {
		st := &v1alpha1.RollingUpgradeConfigStatus{Phase: tc.phase, Conditions: []metav1.Condition{{Type: meta.ReadyCondition, Reason: tc.ready}}}
		if got := HoldReason(st); got != tc.want {
			t.Errorf("%s with Ready %s: %q, want %q", tc.phase, tc.ready, got, tc.want)
		}
	}
}

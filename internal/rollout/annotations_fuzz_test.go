package rollout

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/rollgate/rollgate/api/v1alpha1"
)

// FuzzAnnotations: whatever a person (or a tool) writes into the config's annotations, a decision
// is made, its messages stay bounded, and it is stable: deciding again on its result emits nothing
// new unless time passes.
func FuzzAnnotations(f *testing.F) {
	f.Add(repo+":1.1.0", StepHealthCheck, now.Add(-time.Minute).Format(time.RFC3339), "", "t1")
	f.Add("", StepRollingBack, "yesterday", now.Format(time.RFC3339), "")
	f.Add(repo+"@sha256:"+sha[7:], "", "", "", "")
	f.Add("ghcr.io/other/thing:1.0.0", "Sometime", "", "garbage", "t2")
	f.Fuzz(func(t *testing.T, target, step, started, paused, reset string) {
		cfg := config(current("1.0.0"), func(c *v1alpha1.RollingUpgradeConfig) {
			for k, v := range map[string]string{v1alpha1.TargetImageAnnotation: target, v1alpha1.UpdatePhaseAnnotation: step,
				v1alpha1.UpdateStartedAnnotation: started, v1alpha1.CheckPausedAnnotation: paused, v1alpha1.ResetCircuitAnnotation: reset} {
				if v != "" {
					c.Annotations[k] = v
				}
			}
		})
		in := Input{Now: now, Config: cfg, Workload: deploymentAt("1.0.0", healthy), Candidates: av("1.1.0")}
		d := Decide(in)
		for _, c := range d.Status.Conditions {
			if len(c.Message) > maxMessage {
				t.Errorf("condition %s has %d bytes", c.Type, len(c.Message))
			}
		}
		for _, e := range d.Events {
			if len(e.Message) > maxMessage {
				t.Errorf("event %s has %d bytes", e.Reason, len(e.Message))
			}
		}
		_, _ = RenderImage(cfg, now)
		// Read, written back and read again, the in-flight state is the same.
		read := AnnotationsOf(cfg)
		again := cfg.DeepCopy()
		for k, v := range read.Values() {
			if v == "" {
				delete(again.Annotations, k)
			} else {
				again.Annotations[k] = v
			}
		}
		if diff := cmp.Diff(read, AnnotationsOf(again), cmp.AllowUnexported(Annotations{})); diff != "" {
			t.Errorf("read again after writing back (-first +second):\n%s", diff)
		}
	})
}

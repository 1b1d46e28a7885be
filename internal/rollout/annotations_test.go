package rollout

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rollgate/rollgate/api/v1alpha1"
)

// The in-flight state is read once, its instants as times: a value with an offset is the same
// instant in UTC, and a value that is no time is kept as it was found, so that writing the state
// back changes nothing a person must mend.
func TestAnnotationsAreReadOnce(t *testing.T) {
	started := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		want        Annotations
		wantPaused  bool
		wantValues  map[string]string // what is written back, by key, when it differs from what was read
	}{
		{name: "none", annotations: map[string]string{}},
		{name: "a check in flight",
			annotations: map[string]string{v1alpha1.TargetImageAnnotation: repo + ":1.1.0", v1alpha1.UpdatePhaseAnnotation: StepHealthCheck,
				v1alpha1.UpdateStartedAnnotation: "2026-12-01T02:00:00Z"},
			want: Annotations{TargetImage: repo + ":1.1.0", Step: StepHealthCheck, UpdateStarted: started}},
		{name: "an offset reads as the same instant, written back in UTC",
			annotations: map[string]string{v1alpha1.UpdatePhaseAnnotation: StepRollingBack, v1alpha1.UpdateStartedAnnotation: "2026-12-01T03:00:00+01:00"},
			want:        Annotations{Step: StepRollingBack, UpdateStarted: started},
			wantValues:  map[string]string{v1alpha1.UpdateStartedAnnotation: "2026-12-01T02:00:00Z"}},
		{name: "a paused check",
			annotations: map[string]string{v1alpha1.UpdatePhaseAnnotation: StepHealthCheck, v1alpha1.UpdateStartedAnnotation: "2026-12-01T02:00:00Z",
				v1alpha1.CheckPausedAnnotation: "2026-12-01T02:05:00Z"},
			want:       Annotations{Step: StepHealthCheck, UpdateStarted: started, CheckPaused: started.Add(5 * time.Minute)},
			wantPaused: true},
		{name: "values that are no times are kept as found; a pause still pauses",
			annotations: map[string]string{v1alpha1.UpdatePhaseAnnotation: StepHealthCheck, v1alpha1.UpdateStartedAnnotation: "yesterday",
				v1alpha1.CheckPausedAnnotation: "a while ago"},
			want:       Annotations{Step: StepHealthCheck, unreadStarted: "yesterday", unreadPaused: "a while ago"},
			wantPaused: true},
		{name: "the zero time is kept as found, as absent is not",
			annotations: map[string]string{v1alpha1.UpdatePhaseAnnotation: StepHealthCheck, v1alpha1.UpdateStartedAnnotation: "0001-01-01T00:00:00Z",
				v1alpha1.CheckPausedAnnotation: "0001-01-01T00:00:00Z"},
			want:       Annotations{Step: StepHealthCheck, unreadStarted: "0001-01-01T00:00:00Z", unreadPaused: "0001-01-01T00:00:00Z"},
			wantPaused: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config(func(c *v1alpha1.RollingUpgradeConfig) { c.Annotations = tc.annotations })
			got := AnnotationsOf(cfg)
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(Annotations{})); diff != "" {
				t.Errorf("read (-want +got):\n%s", diff)
			}
			if got.Paused() != tc.wantPaused {
				t.Errorf("paused %v, want %v", got.Paused(), tc.wantPaused)
			}
			want := map[string]string{}
			for _, key := range []string{v1alpha1.TargetImageAnnotation, v1alpha1.UpdatePhaseAnnotation, v1alpha1.UpdateStartedAnnotation, v1alpha1.CheckPausedAnnotation} {
				want[key] = tc.annotations[key]
				if v, ok := tc.wantValues[key]; ok {
					want[key] = v
				}
			}
			if diff := cmp.Diff(want, got.Values()); diff != "" {
				t.Errorf("written back (-want +got):\n%s", diff)
			}
		})
	}
}

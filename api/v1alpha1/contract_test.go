package v1alpha1_test

import (
	"os"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/rollgate/rollgate/api/v1alpha1"
)

// readStrict decodes a testdata file and fails on any field the Go types do not know, so a renamed
// or missing contract field breaks the build of the test, not a user's manifest.
func readStrict(t *testing.T, path string, into any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(data, into); err != nil {
		t.Fatalf("%s does not match the Go types: %v", path, err)
	}
}

func TestRollingUpgradeConfigMatchesContract(t *testing.T) {
	var ruc v1alpha1.RollingUpgradeConfig
	readStrict(t, "testdata/rollingupgradeconfig_contract.yaml", &ruc)

	if got := ruc.Annotations[v1alpha1.TargetImageAnnotation]; got != "ghcr.io/acme/web:1.4.0" {
		t.Errorf("target-image annotation = %q", got)
	}
	for _, key := range []string{v1alpha1.UpdatePhaseAnnotation, v1alpha1.UpdateStartedAnnotation, v1alpha1.ResetCircuitAnnotation} {
		if _, ok := ruc.Annotations[key]; !ok {
			t.Errorf("annotation %s of the contract is not the constant's value", key)
		}
	}
	s := ruc.Spec
	if s.TargetRef.Kind != v1alpha1.KindDeployment || s.TargetRef.Name != "web" {
		t.Errorf("targetRef = %+v", s.TargetRef)
	}
	if len(s.Sources) != 3 || s.Sources[0].ApplicationVersion == nil || s.Sources[1].ConfigMap == nil ||
		s.Sources[2].Registry == nil || s.Sources[2].Registry.Interval == nil || s.Sources[2].Registry.Interval.Duration != time.Hour {
		t.Errorf("sources = %+v", s.Sources)
	}
	w := s.MaintenanceWindow
	if w == nil || w.Schedule != "0 3 * * *" || w.Duration.Duration != 2*time.Hour || w.TimeZone != "Europe/Berlin" {
		t.Errorf("maintenanceWindow = %+v", w)
	}
	if s.HealthTimeoutOrDefault() != 10*time.Minute || s.MaxRollbacks != 3 {
		t.Errorf("healthTimeout = %v, maxRollbacks = %d", s.HealthTimeout, s.MaxRollbacks)
	}
	st := ruc.Status
	wantNext := metav1.NewTime(time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC))
	if st.Phase != v1alpha1.PhaseIdle || st.CurrentVersion != "1.3.0" || st.TargetVersion != "1.4.0" ||
		!st.NextWindow.Equal(&wantNext) || len(st.FailedVersions) != 1 || len(st.VersionHistory) != 1 ||
		st.VersionHistory[0].Status != v1alpha1.ResultHealthy {
		t.Errorf("status = %+v", st)
	}
}

func TestApplicationVersionMatchesContract(t *testing.T) {
	var av v1alpha1.ApplicationVersion
	readStrict(t, "testdata/applicationversion_contract.yaml", &av)
	if av.Spec.Image != "ghcr.io/acme/web" || av.Spec.Version != "1.4.0" || av.Spec.ReleasedAt == nil {
		t.Errorf("spec = %+v", av.Spec)
	}
}

func TestDeepCopyIsIndependent(t *testing.T) {
	var ruc v1alpha1.RollingUpgradeConfig
	readStrict(t, "testdata/rollingupgradeconfig_contract.yaml", &ruc)
	cp := ruc.DeepCopy()
	cp.Spec.Sources[0].ApplicationVersion.Name = "changed"
	cp.Spec.MaintenanceWindow.Duration.Duration = time.Minute
	cp.Status.FailedVersions[0] = "9.9.9"
	cp.Status.VersionHistory[0].Version = "9.9.9"
	if ruc.Spec.Sources[0].ApplicationVersion.Name != "web" || ruc.Spec.MaintenanceWindow.Duration.Duration != 2*time.Hour ||
		ruc.Status.FailedVersions[0] != "1.2.0" || ruc.Status.VersionHistory[0].Version != "1.3.0" {
		t.Error("DeepCopy shares memory with the original")
	}
}

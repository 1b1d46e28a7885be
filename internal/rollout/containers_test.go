package rollout

import (
	"strings"
	"testing"

	"github.com/rollgate/rollgate/api/v1alpha1"
)

func TestTheImageSeveralContainersRun(t *testing.T) {
	const (
		v1     = "ghcr.io/acme/web:1.0.0"
		v2     = "ghcr.io/acme/web:1.1.0"
		pinned = v2 + "@sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	)
	web := func(img string) Container { return Container{Name: "web", Image: img} }
	migrate := func(img string) Container { return Container{Name: "migrate", Image: img, Init: true} }
	for _, tc := range []struct {
		name              string
		cs                []Container
		rendered, current string
		want              string // container name
		problem           string // part of it
	}{
		{"one container", []Container{web(v1)}, "", "", "web", ""},
		{"all run one image", []Container{web(v2), migrate(v2)}, v2, v1, "web", ""},
		{"a digest a webhook pinned is its tag's image", []Container{web(pinned), migrate(v2)}, "", "", "web", ""},
		{"one changed by another hand is what runs", []Container{web(v2), migrate(v1)}, v2, v2, "migrate", ""},
		{"measured against the recorded image when nothing was rendered", []Container{web(v2), migrate(v1)}, "", v1, "web", ""},
		{"different images with nothing recorded", []Container{web(v2), migrate(v1)}, v2, "",
			"", "web runs " + v2 + ", migrate runs " + v1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, problem := Running(tc.cs, tc.rendered, tc.current)
			if c.Name != tc.want || (tc.problem == "") != (problem == "") || !strings.Contains(problem, tc.problem) {
				t.Errorf("Running = %q, %q; want %q, %q", c.Name, problem, tc.want, tc.problem)
			}
		})
	}
}

// Naming the same containers another way is no retarget; naming others is.
func TestTheSameContainersNamedAnotherWay(t *testing.T) {
	spec := func(container string, containers ...string) v1alpha1.RollingUpgradeConfigSpec {
		return v1alpha1.RollingUpgradeConfigSpec{TargetRef: v1alpha1.WorkloadReference{Kind: v1alpha1.KindDeployment, Name: "web"},
			Container: container, Containers: containers}
	}
	for _, tc := range []struct {
		name        string
		before, now v1alpha1.RollingUpgradeConfigSpec
		same        bool
	}{
		{"container: web and containers: [web]", spec("web"), spec("", "web"), true},
		{"the order of the list", spec("", "web", "migrate"), spec("", "migrate", "web"), true},
		{"one more container", spec("", "web"), spec("", "web", "migrate"), false},
		{"another container", spec("web"), spec("worker"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := recordedFor(RecordedTargetOf(tc.before), tc.now); got != tc.same {
				t.Errorf("recorded for the same containers: %v, want %v", got, tc.same)
			}
		})
	}
}

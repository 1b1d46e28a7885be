package kube

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/rollgate/rollgate/internal/rollout"
)

// ManagedContainers finds the containers a config manages in a pod spec: the named ones, among its
// containers and init containers, or its first container when none is named. missing names those
// it lacks.
func ManagedContainers(spec *corev1.PodSpec, names []string) (cs []rollout.Container, missing []string) {
	if len(names) == 0 {
		if len(spec.Containers) == 0 {
			return nil, []string{""}
		}
		return []rollout.Container{{Name: spec.Containers[0].Name, Image: spec.Containers[0].Image}}, nil
	}
	for _, n := range names {
		if c := named(spec.Containers, n); c != nil {
			cs = append(cs, rollout.Container{Name: n, Image: c.Image})
		} else if c := named(spec.InitContainers, n); c != nil {
			cs = append(cs, rollout.Container{Name: n, Image: c.Image, Init: true})
		} else {
			missing = append(missing, n)
		}
	}
	return cs, missing
}

func named(cs []corev1.Container, name string) *corev1.Container {
	for i := range cs {
		if cs[i].Name == name {
			return &cs[i]
		}
	}
	return nil
}

// Containers finds the containers a config manages in the workload's pod template.
func (w *Workload) Containers(names []string) ([]rollout.Container, error) {
	spec := w.PodSpec()
	cs, missing := ManagedContainers(spec, names)
	switch {
	case len(missing) == 0:
		return cs, nil
	case len(spec.Containers) == 0:
		return nil, fmt.Errorf("%s has no containers", w.Describe())
	}
	var have []string
	for _, list := range [][]corev1.Container{spec.Containers, spec.InitContainers} {
		for i := range list {
			have = append(have, list[i].Name)
		}
	}
	quoted := make([]string, len(missing))
	for i, m := range missing {
		quoted[i] = fmt.Sprintf("%q", m)
	}
	return nil, fmt.Errorf("container %s not found in %s (containers: %s)", strings.Join(quoted, ", "), w.Describe(), strings.Join(have, ", "))
}

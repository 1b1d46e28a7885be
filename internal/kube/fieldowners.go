package kube

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/rollout"
)

// A GitOps tool that applies the workload from Git with force takes the image field back, and the
// renderer would put its image back in turn, again and again. The renderer counts such reverts on
// the workload (v1alpha1.RevertsAnnotation) since it last rendered a new image, and stops at
// v1alpha1.MaxImageReverts (decideRender); the engine then reports the other field manager.

// ImageOwners lists the field managers that own the image of container c in a pod template
// (spec.template.spec.containers[name=...].image, or initContainers).
func ImageOwners(fields []metav1.ManagedFieldsEntry, c rollout.Container) ([]string, error) {
	key := "k:" + mustMarshal(map[string]string{"name": c.Name})
	list := listOf(c)
	var owners []string
	for _, e := range fields {
		if e.FieldsV1 == nil {
			continue
		}
		var tree map[string]any
		if err := json.Unmarshal(e.FieldsV1.GetRawBytes(), &tree); err != nil {
			return nil, fmt.Errorf("managedFields of %s: %w", e.Manager, err)
		}
		if has(tree, "f:spec", "f:template", "f:spec", list, key, "f:image") && !slices.Contains(owners, e.Manager) {
			owners = append(owners, e.Manager)
		}
	}
	return owners, nil
}

func has(tree map[string]any, path ...string) bool {
	_, ok := dig(tree, path...)
	return ok
}

// dig is the subtree of a managedFields field set at path; ok is false when there is none.
func dig(tree map[string]any, path ...string) (map[string]any, bool) {
	for _, p := range path {
		next, ok := tree[p].(map[string]any)
		if !ok {
			return nil, false
		}
		tree = next
	}
	return tree, true
}

func mustMarshal(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// Reverts reads the revert counter of a workload.
func Reverts(annotations map[string]string) int {
	n, _ := strconv.Atoi(annotations[v1alpha1.RevertsAnnotation])
	return n
}

// WithoutImagesLetGo is fields without rollgate's ownership of the image of any container but
// those of keep, and whether there was any: the containers a config named before and names no
// longer. Giving them up by applying without them would delete their images (a pod template cannot
// lack one); dropped from rollgate's entry, the images stay as they are, owned by no one until the
// next manager applies them.
func WithoutImagesLetGo(fields []metav1.ManagedFieldsEntry, keep []rollout.Container) ([]metav1.ManagedFieldsEntry, bool, error) {
	kept := map[string]bool{}
	for _, c := range keep {
		kept[listOf(c)+"/"+"k:"+mustMarshal(map[string]string{"name": c.Name})] = true
	}
	out := slices.Clone(fields)
	dropped := false
	for i, e := range out {
		if e.Manager != v1alpha1.FieldManager || e.FieldsV1 == nil {
			continue
		}
		var tree map[string]any
		if err := json.Unmarshal(e.FieldsV1.GetRawBytes(), &tree); err != nil {
			return nil, false, fmt.Errorf("managedFields of %s: %w", e.Manager, err)
		}
		pod, ok := dig(tree, "f:spec", "f:template", "f:spec")
		if !ok {
			continue
		}
		changed := false
		for _, list := range []string{"f:containers", "f:initContainers"} {
			items, _ := pod[list].(map[string]any)
			for key := range items {
				if !kept[list+"/"+key] {
					delete(items, key)
					changed = true
				}
			}
			if changed && len(items) == 0 {
				delete(pod, list) // an empty set would own the whole list
			}
		}
		if changed {
			prune(tree, "f:spec", "f:template", "f:spec")
			out[i].FieldsV1 = metav1.NewFieldsV1(mustMarshal(tree))
			dropped = true
		}
	}
	return out, dropped, nil
}

// listOf is the field of the pod spec that lists c.
func listOf(c rollout.Container) string {
	if c.Init {
		return "f:initContainers"
	}
	return "f:containers"
}

// prune removes the sets along path, deepest first, that were left empty.
func prune(tree map[string]any, path ...string) {
	if len(path) == 0 {
		return
	}
	next, ok := tree[path[0]].(map[string]any)
	if !ok {
		return
	}
	prune(next, path[1:]...)
	if len(next) == 0 {
		delete(tree, path[0])
	}
}

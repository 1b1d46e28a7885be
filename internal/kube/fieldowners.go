package kube

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rollgate/rollgate/api/v1alpha1"
)

// A GitOps tool that applies the workload from Git with force takes the image field back, and the
// renderer would put its image back in turn, again and again. The renderer counts such reverts on
// the workload (v1alpha1.RevertsAnnotation) since it last rendered a new image, and stops at
// v1alpha1.MaxImageReverts (decideRender); the engine then reports the other field manager.

// ImageOwners lists the field managers that own the image of the named container in a pod
// template (spec.template.spec.containers[name=...].image).
func ImageOwners(fields []metav1.ManagedFieldsEntry, container string) ([]string, error) {
	key := "k:" + mustMarshal(map[string]string{"name": container})
	var owners []string
	for _, e := range fields {
		if e.FieldsV1 == nil {
			continue
		}
		var tree map[string]any
		if err := json.Unmarshal(e.FieldsV1.GetRawBytes(), &tree); err != nil {
			return nil, fmt.Errorf("managedFields of %s: %w", e.Manager, err)
		}
		if has(tree, "f:spec", "f:template", "f:spec", "f:containers", key, "f:image") && !slices.Contains(owners, e.Manager) {
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

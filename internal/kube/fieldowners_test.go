package kube

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func entry(manager, fields string) metav1.ManagedFieldsEntry {
	return metav1.ManagedFieldsEntry{Manager: manager, FieldsV1: metav1.NewFieldsV1(fields)}
}

func TestImageOwners(t *testing.T) {
	image := `{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{"f:image":{}}}}}}}`
	sidecar := `{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"log-shipper\"}":{"f:image":{},"f:name":{}}}}}}}`
	other := `{"f:metadata":{"f:labels":{}},"f:spec":{"f:replicas":{}}}`
	fields := []metav1.ManagedFieldsEntry{
		entry("kubectl-create", sidecar),
		entry("kustomize-controller", image),
		entry("kube-controller-manager", other),
		entry("rollgate", image),
	}
	got, err := ImageOwners(fields, "web")
	if err != nil || !slices.Equal(got, []string{"kustomize-controller", "rollgate"}) {
		t.Errorf("owners of web = %v, %v", got, err)
	}
	if got, _ := ImageOwners(fields, "log-shipper"); !slices.Equal(got, []string{"kubectl-create"}) {
		t.Errorf("owners of log-shipper = %v", got)
	}
	if _, err := ImageOwners([]metav1.ManagedFieldsEntry{entry("x", "{not json")}, "web"); err == nil {
		t.Error("garbage managedFields accepted")
	}
}

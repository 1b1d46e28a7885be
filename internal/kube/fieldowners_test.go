package kube

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/rollout"
)

func entry(manager, fields string) metav1.ManagedFieldsEntry {
	return metav1.ManagedFieldsEntry{Manager: manager, FieldsV1: metav1.NewFieldsV1(fields)}
}

func TestImageOwners(t *testing.T) {
	image := `{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{"f:image":{}}}}}}}`
	sidecar := `{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"log-shipper\"}":{"f:image":{},"f:name":{}}}}}}}`
	other := `{"f:metadata":{"f:labels":{}},"f:spec":{"f:replicas":{}}}`
	migrate := `{"f:spec":{"f:template":{"f:spec":{"f:initContainers":{"k:{\"name\":\"web\"}":{"f:image":{}}}}}}}`
	fields := []metav1.ManagedFieldsEntry{
		entry("kubectl-create", sidecar),
		entry("helm", migrate),
		entry("kustomize-controller", image),
		entry("kube-controller-manager", other),
		entry("rollgate", image),
	}
	got, err := ImageOwners(fields, rollout.Container{Name: "web"})
	if err != nil || !slices.Equal(got, []string{"kustomize-controller", "rollgate"}) {
		t.Errorf("owners of web = %v, %v", got, err)
	}
	if got, _ := ImageOwners(fields, rollout.Container{Name: "log-shipper"}); !slices.Equal(got, []string{"kubectl-create"}) {
		t.Errorf("owners of log-shipper = %v", got)
	}
	// An init container of the same name is another field.
	if got, _ := ImageOwners(fields, rollout.Container{Name: "web", Init: true}); !slices.Equal(got, []string{"helm"}) {
		t.Errorf("owners of init container web = %v", got)
	}
	if _, err := ImageOwners([]metav1.ManagedFieldsEntry{entry("x", "{not json")}, rollout.Container{Name: "web"}); err == nil {
		t.Error("garbage managedFields accepted")
	}
}

func TestWithoutImagesLetGo(t *testing.T) {
	web := `"k:{\"name\":\"web\"}":{".":{},"f:image":{},"f:name":{}}`
	migrate := `"k:{\"name\":\"migrate\"}":{".":{},"f:image":{},"f:name":{}}`
	annotations := `"f:metadata":{"f:annotations":{"f:rollgate.dev/last-image":{}}}`
	both := `{` + annotations + `,"f:spec":{"f:template":{"f:spec":{"f:containers":{` + web + `},"f:initContainers":{` + migrate + `}}}}}`
	created := `{"f:spec":{"f:template":{"f:spec":{"f:initContainers":{` + migrate + `}}}}}`
	for _, tc := range []struct {
		name    string
		keep    []rollout.Container
		want    string // rollgate's entry after
		dropped bool
	}{
		{"both still named", []rollout.Container{{Name: "web"}, {Name: "migrate", Init: true}}, both, false},
		{"the init container let go", []rollout.Container{{Name: "web"}},
			`{` + annotations + `,"f:spec":{"f:template":{"f:spec":{"f:containers":{` + web + `}}}}}`, true},
		{"both let go", []rollout.Container{{Name: "api"}}, `{` + annotations + `}`, true},
		{"a container of that name is another field than an init container", []rollout.Container{{Name: "web"}, {Name: "migrate"}},
			`{` + annotations + `,"f:spec":{"f:template":{"f:spec":{"f:containers":{` + web + `}}}}}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fields := []metav1.ManagedFieldsEntry{entry("kubectl-create", created), entry(v1alpha1.FieldManager, both)}
			got, dropped, err := WithoutImagesLetGo(fields, tc.keep)
			if err != nil {
				t.Fatal(err)
			}
			if dropped != tc.dropped || string(got[1].FieldsV1.GetRawBytes()) != tc.want && tc.dropped {
				t.Errorf("dropped %v, rollgate's entry %s; want %v, %s", dropped, got[1].FieldsV1.GetRawBytes(), tc.dropped, tc.want)
			}
			if string(got[0].FieldsV1.GetRawBytes()) != created || string(fields[1].FieldsV1.GetRawBytes()) != both {
				t.Errorf("another manager's entry, or the fields given, changed: %s, %s", got[0].FieldsV1.GetRawBytes(), fields[1].FieldsV1.GetRawBytes())
			}
		})
	}
}

package controllers

import (
	"maps"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/rollgate/rollgate/api/v1alpha1"
)

func TestTrimForCacheKeepsWhatRollgateReads(t *testing.T) {
	image := `{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{".":{},"f:image":{}}}}}}}`
	replicas := `{"f:spec":{"f:replicas":{}}}`
	status := `{"f:status":{"f:replicas":{},"f:conditions":{}}}`
	fields := []metav1.ManagedFieldsEntry{entry("kubectl", image), entry("kube-controller-manager", status),
		entry("hpa", replicas), entry(v1alpha1.FieldManager, image)}
	annotations := map[string]string{lastAppliedAnnotation: `{"big":"copy"}`, v1alpha1.LastImageAnnotation: "web:1.1.0"}

	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", ManagedFields: slices.Clone(fields), Annotations: maps.Clone(annotations)}}
	ownersBefore, _ := imageOwners(fields, "web")
	got, err := TrimForCache(d)
	if err != nil {
		t.Fatal(err)
	}
	trimmed := got.(*appsv1.Deployment)
	var kept []string
	for _, e := range trimmed.ManagedFields {
		kept = append(kept, e.Manager)
	}
	if !slices.Equal(kept, []string{"kubectl", v1alpha1.FieldManager}) {
		t.Errorf("kept managedFields of %v, want those owning an image: kubectl, rollgate", kept)
	}
	if ownersAfter, _ := imageOwners(trimmed.ManagedFields, "web"); !slices.Equal(ownersAfter, ownersBefore) {
		t.Errorf("image owners %v after trimming, %v before", ownersAfter, ownersBefore)
	}
	if _, ok := trimmed.Annotations[lastAppliedAnnotation]; ok || trimmed.Annotations[v1alpha1.LastImageAnnotation] != "web:1.1.0" {
		t.Errorf("workload annotations = %v, want rollgate's without kubectl's last-applied copy", trimmed.Annotations)
	}

	s := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{ManagedFields: []metav1.ManagedFieldsEntry{entry("kube-controller-manager", status)}}}
	if got, _ := TrimForCache(s); got.(*appsv1.StatefulSet).ManagedFields != nil {
		t.Errorf("a workload whose image nobody owns kept managedFields %v", got.(*appsv1.StatefulSet).ManagedFields)
	}

	// Configs are written by update: their annotations must stay whole, their managedFields go
	// (an update without them leaves the stored ones as they are).
	c := &v1alpha1.RollingUpgradeConfig{ObjectMeta: metav1.ObjectMeta{ManagedFields: slices.Clone(fields), Annotations: maps.Clone(annotations)}}
	trimmedConfig, _ := TrimForCache(c)
	if rc := trimmedConfig.(*v1alpha1.RollingUpgradeConfig); rc.ManagedFields != nil || len(rc.Annotations) != len(annotations) {
		t.Errorf("config: managedFields %v, annotations %v; want none, and all of them", rc.ManagedFields, rc.Annotations)
	}

	tombstone := toolscache.DeletedFinalStateUnknown{Key: "shop/web"}
	if got, err := TrimForCache(tombstone); err != nil || got != tombstone {
		t.Errorf("a tombstone came back as %v, %v", got, err)
	}
}

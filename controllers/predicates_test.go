package controllers

import (
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/rollgate/rollgate/api/v1alpha1"
)

func TestConfigUpdatePredicates(t *testing.T) {
	plain := &v1alpha1.RollingUpgradeConfig{}
	writesBack := &v1alpha1.RollingUpgradeConfig{Spec: v1alpha1.RollingUpgradeConfigSpec{
		GitWriteBack: &v1alpha1.GitWriteBackReference{Name: "fleet", Path: "k.yaml"}}}
	read := writesBack.DeepCopy()
	read.Status.GitWriteBack = &v1alpha1.GitWriteBackStatus{Written: "sha256:0"}
	update := func(old, cur *v1alpha1.RollingUpgradeConfig) event.UpdateEvent {
		return event.UpdateEvent{ObjectOld: old, ObjectNew: cur}
	}
	for _, tc := range []struct {
		name string
		got  bool
		want bool
	}{
		{"the record read for the first time wakes the engine", gitRecordRead.Update(update(writesBack, read)), true},
		{"a later write does not", gitRecordRead.Update(update(read, read)), false},
		{"the written status taken off does not", gitRecordRead.Update(update(read, writesBack)), false},
		{"creation is not its business", gitRecordRead.Create(event.CreateEvent{Object: read}), false},
		{"spec.gitWriteBack removed reaches the write-back", removedWriteBack.Update(update(writesBack, plain)), true},
		{"spec.gitWriteBack added is not a removal", removedWriteBack.Update(update(plain, writesBack)), false},
		{"deletion is not its business", removedWriteBack.Delete(event.DeleteEvent{Object: writesBack}), false},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}

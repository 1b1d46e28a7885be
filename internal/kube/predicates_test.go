package kube

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/rollgate/rollgate/api/v1alpha1"
)

func TestConfigUpdatePredicates(t *testing.T) {
	plain := &v1alpha1.RollingUpgradeConfig{}
	writesBack := &v1alpha1.RollingUpgradeConfig{Spec: v1alpha1.RollingUpgradeConfigSpec{
		GitWriteBack: &v1alpha1.GitWriteBackReference{Name: "fleet", Path: "k.yaml"}}}
	read := writesBack.DeepCopy()
	read.Status.GitWriteBack = &v1alpha1.GitWriteBackStatus{Written: "sha256:0"}
	// A GitFirst config: read, then written at a time, then failing.
	gitFirst := read.DeepCopy()
	gitFirst.Spec.GitWriteBack.Mode = v1alpha1.ModeGitFirst
	wrote := gitFirst.DeepCopy()
	wrote.Status.GitWriteBack.LastWrite = &metav1.Time{Time: time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)}
	wrote.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionGitWriteBack, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonWritten}}
	wroteAgain := wrote.DeepCopy()
	wroteAgain.Status.GitWriteBack.LastWrite = &metav1.Time{Time: wrote.Status.GitWriteBack.LastWrite.Add(time.Minute)}
	failing := wrote.DeepCopy()
	failing.Status.Conditions[0].Status, failing.Status.Conditions[0].Reason = metav1.ConditionFalse, v1alpha1.EventGitWriteBackFailed
	clusterFirst := wrote.DeepCopy()
	clusterFirst.Spec.GitWriteBack.Mode = v1alpha1.ModeClusterFirst
	clusterFirstAgain := clusterFirst.DeepCopy()
	clusterFirstAgain.Status.GitWriteBack.LastWrite = wroteAgain.Status.GitWriteBack.LastWrite
	clusterFirstFailing := clusterFirst.DeepCopy()
	clusterFirstFailing.Status.Conditions = failing.Status.Conditions
	update := func(old, cur *v1alpha1.RollingUpgradeConfig) event.UpdateEvent {
		return event.UpdateEvent{ObjectOld: old, ObjectNew: cur}
	}
	for _, tc := range []struct {
		name string
		got  bool
		want bool
	}{
		{"the record read for the first time wakes the engine", GitRecordRead.Update(update(writesBack, read)), true},
		{"a later write does not", GitRecordRead.Update(update(read, read)), false},
		{"the written status taken off does not", GitRecordRead.Update(update(read, writesBack)), false},
		{"creation is not its business", GitRecordRead.Create(event.CreateEvent{Object: read}), false},
		{"spec.gitWriteBack removed reaches the write-back", RemovedWriteBack.Update(update(writesBack, plain)), true},
		{"spec.gitWriteBack added is not a removal", RemovedWriteBack.Update(update(plain, writesBack)), false},
		{"deletion is not its business", RemovedWriteBack.Delete(event.DeleteEvent{Object: writesBack}), false},
		{"a GitFirst write that went through wakes the engine", GitWritten.Update(update(gitFirst, wrote)), true},
		{"so does the next one", GitWritten.Update(update(wrote, wroteAgain)), true},
		{"so does one that failed", GitWritten.Update(update(wrote, failing)), true},
		{"an update that changes neither does not", GitWritten.Update(update(wrote, wrote.DeepCopy())), false},
		{"a ClusterFirst config's writes do not", GitWritten.Update(update(clusterFirst, clusterFirstAgain)), false},
		// Its condition is a series of the engine's metrics (rolling_upgrade_condition), which an
		// alert reads.
		{"a ClusterFirst config's write that starts failing does", GitWritten.Update(update(clusterFirst, clusterFirstFailing)), true},
		{"and one that writes again", GitWritten.Update(update(clusterFirstFailing, clusterFirst)), true},
		{"as does the first write's condition", GitWritten.Update(update(read, clusterFirstFailing)), true},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}

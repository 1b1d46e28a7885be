package kube

import (
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/rollgate/rollgate/api/v1alpha1"
)

// configUpdate lets through the updates of a config for which changed(old, new) holds, and nothing
// else (predicate.Funcs lets through every event it has no function for).
func configUpdate(changed func(old, cur *v1alpha1.RollingUpgradeConfig) bool) predicate.Funcs {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			old, ok1 := e.ObjectOld.(*v1alpha1.RollingUpgradeConfig)
			cur, ok2 := e.ObjectNew.(*v1alpha1.RollingUpgradeConfig)
			return ok1 && ok2 && changed(old, cur)
		},
	}
}

// GitRecordRead lets through the status update by which the write-back first read a config's
// record in Git: the engine starts no rollout of such a config until then.
var GitRecordRead = configUpdate(func(old, cur *v1alpha1.RollingUpgradeConfig) bool {
	return old.Status.GitWriteBack == nil && cur.Status.GitWriteBack != nil
})

// RemovedWriteBack lets through the update that takes spec.gitWriteBack away, so the write-back
// forgets the config.
var RemovedWriteBack = configUpdate(func(old, cur *v1alpha1.RollingUpgradeConfig) bool {
	return old.Spec.GitWriteBack != nil && cur.Spec.GitWriteBack == nil
})

// GitWritten lets through the status updates by which the write-back says that a config's writes
// started or stopped failing (its GitWriteBack condition, a series of the engine's metrics that an
// alert reads), and, for a GitFirst config, each write that went through: such a config starts,
// and times its wait for the GitOps tool, by what Git took.
var GitWritten = configUpdate(func(old, cur *v1alpha1.RollingUpgradeConfig) bool {
	condition := func(c *v1alpha1.RollingUpgradeConfig) metav1.ConditionStatus {
		if cond := apimeta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionGitWriteBack); cond != nil {
			return cond.Status
		}
		return ""
	}
	if condition(old) != condition(cur) {
		return true
	}
	lastWrite := func(c *v1alpha1.RollingUpgradeConfig) *metav1.Time {
		if c.Status.GitWriteBack == nil {
			return nil
		}
		return c.Status.GitWriteBack.LastWrite
	}
	return cur.Spec.GitWriteBack.GitFirst() && !lastWrite(old).Equal(lastWrite(cur))
})

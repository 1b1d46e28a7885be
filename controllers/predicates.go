package controllers

import (
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

// gitRecordRead lets through the status update by which the write-back first read a config's
// record in Git: the engine starts no rollout of such a config until then.
var gitRecordRead = configUpdate(func(old, cur *v1alpha1.RollingUpgradeConfig) bool {
	return old.Status.GitWriteBack == nil && cur.Status.GitWriteBack != nil
})

// removedWriteBack lets through the update that takes spec.gitWriteBack away, so the write-back
// forgets the config.
var removedWriteBack = configUpdate(func(old, cur *v1alpha1.RollingUpgradeConfig) bool {
	return old.Spec.GitWriteBack != nil && cur.Spec.GitWriteBack == nil
})

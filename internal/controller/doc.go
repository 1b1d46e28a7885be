// Package controller registers rollgate's controllers with a manager: the engine (when and to which
// version a workload moves), the renderer (which writes the decided image into the Deployment or
// StatefulSet), the Git write-back, the RolloutCalendars, the ApplicationVersions and the answerer
// of rollgate's readiness gate. docs/architecture.md draws them and what each may import.
//
// The markers below are the manager's whole role (config/rbac/manager/role.yaml is generated from
// them by `make manifests`), and nothing more than the code uses: pods are listed uncached,
// deleted only when stuck in a StatefulSet rollback, and patched (their container's image, and
// the condition of rollgate's readiness gate) only in an in-place upgrade (spec.strategy InPlace),
// secrets and service accounts are read only for the pull credentials of a registry source (and
// the Git credentials a GitWriteBack names), a namespace is read only for its labels when a
// RolloutCalendar picks namespaces by them, and a config is written by a patch of its metadata
// (never its spec) or a write of its status.
//
// +kubebuilder:rbac:groups=rollgate.dev,resources=rollingupgradeconfigs,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=rollgate.dev,resources=rollingupgradeconfigs/status,verbs=update;patch
// +kubebuilder:rbac:groups=rollgate.dev,resources=gitwritebacks,verbs=get;list;watch
// +kubebuilder:rbac:groups=rollgate.dev,resources=gitwritebacks/status,verbs=patch
// +kubebuilder:rbac:groups=rollgate.dev,resources=rolloutcalendars,verbs=get;list;watch
// +kubebuilder:rbac:groups=rollgate.dev,resources=rolloutcalendars/status,verbs=update;patch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get
// +kubebuilder:rbac:groups=rollgate.dev,resources=applicationversions,verbs=get;list;watch
// +kubebuilder:rbac:groups=rollgate.dev,resources=applicationversions/status,verbs=update
// +kubebuilder:rbac:groups=apps,resources=deployments;statefulsets,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups="",resources=pods,verbs=list;delete;patch
// +kubebuilder:rbac:groups="",resources=pods/status,verbs=patch
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=list
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch
// +kubebuilder:rbac:groups=image.toolkit.fluxcd.io,resources=imagepolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets;serviceaccounts,verbs=get
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
package controller

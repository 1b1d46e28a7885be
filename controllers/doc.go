// Package controllers holds rollgate's reconcilers: the RollingUpgradeConfig engine, which decides
// when and to which version a workload moves, and the renderer, which writes the decided image into
// the Deployment or StatefulSet.
//
// The markers below are the manager's whole ClusterRole (config/rbac/role.yaml is generated from
// them by `make manifests`).
//
// +kubebuilder:rbac:groups=rollgate.dev,resources=rollingupgradeconfigs,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=rollgate.dev,resources=rollingupgradeconfigs/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=rollgate.dev,resources=applicationversions,verbs=get;list;watch
// +kubebuilder:rbac:groups=rollgate.dev,resources=applicationversions/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=apps,resources=deployments;statefulsets,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets;serviceaccounts,verbs=get
// +kubebuilder:rbac:groups="";events.k8s.io,resources=events,verbs=create;patch
package controllers

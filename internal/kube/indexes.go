package kube

import (
	"context"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/rollgate/rollgate/api/v1alpha1"
)

// Field indexes on RollingUpgradeConfigs, so that an event on a workload or a source wakes exactly
// the configs that use it.
const (
	IndexTarget             = "rollgate.dev/target"              // "Deployment/web"
	IndexApplicationVersion = "rollgate.dev/application-version" // ApplicationVersion names
	IndexConfigMap          = "rollgate.dev/configmap"           // ConfigMap names
	IndexGitWriteBack       = "rollgate.dev/git-write-back"      // the GitWriteBack's name
	IndexImagePolicy        = "rollgate.dev/image-policy"        // Flux ImagePolicy names
	IndexRepository         = "rollgate.dev/repository"          // spec.image, normalised: index.docker.io/acme/web
)

func TargetKey(kind v1alpha1.WorkloadKind, name string) string {
	return fmt.Sprintf("%s/%s", kind, name)
}

// The index functions, by index name.
var ConfigIndexes = map[string]client.IndexerFunc{
	IndexTarget: func(o client.Object) []string {
		r := o.(*v1alpha1.RollingUpgradeConfig)
		return []string{TargetKey(r.Spec.TargetRef.Kind, r.Spec.TargetRef.Name)}
	},
	IndexApplicationVersion: sourceNames(func(s v1alpha1.VersionSource) string {
		if s.ApplicationVersion != nil {
			return s.ApplicationVersion.Name
		}
		return ""
	}),
	IndexRepository: func(o client.Object) []string {
		repo, err := name.NewRepository(o.(*v1alpha1.RollingUpgradeConfig).Spec.Image, name.WeakValidation)
		if err != nil {
			return nil
		}
		return []string{repo.Name()}
	},
	IndexGitWriteBack: func(o client.Object) []string {
		if g := o.(*v1alpha1.RollingUpgradeConfig).Spec.GitWriteBack; g != nil {
			return []string{g.Name}
		}
		return nil
	},
	IndexImagePolicy: sourceNames(func(s v1alpha1.VersionSource) string {
		if s.ImagePolicy != nil {
			return s.ImagePolicy.Name
		}
		return ""
	}),
	IndexConfigMap: sourceNames(func(s v1alpha1.VersionSource) string {
		if s.ConfigMap != nil {
			return s.ConfigMap.Name
		}
		return ""
	}),
}

// sourceNames indexes a config by the object names its sources of one kind read.
func sourceNames(name func(v1alpha1.VersionSource) string) client.IndexerFunc {
	return func(o client.Object) []string {
		var names []string
		for _, s := range o.(*v1alpha1.RollingUpgradeConfig).Spec.Sources {
			if n := name(s); n != "" {
				names = append(names, n)
			}
		}
		return names
	}
}

// SetupIndexes registers the indexes once per manager.
func SetupIndexes(ctx context.Context, mgr ctrl.Manager) error {
	for name, fn := range ConfigIndexes {
		if err := mgr.GetFieldIndexer().IndexField(ctx, &v1alpha1.RollingUpgradeConfig{}, name, fn); err != nil {
			return err
		}
	}
	return nil
}

// configsWhere maps an object to the configs in its namespace whose index holds key(object).
func configsWhere(c client.Reader, index string, key func(client.Object) string) handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		var list v1alpha1.RollingUpgradeConfigList
		// Only the names are read: no copy of each config (a ConfigMap shared by thousands of
		// configs would copy them all on every change).
		if err := c.List(ctx, &list, client.InNamespace(o.GetNamespace()), client.MatchingFields{index: key(o)},
			client.UnsafeDisableDeepCopy); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "listing configs for an event", "index", index, "object", o.GetName())
			return nil
		}
		return RequestsOf(&list)
	})
}

// RequestsOf are the reconcile requests of the configs in list.
func RequestsOf(list *v1alpha1.RollingUpgradeConfigList) []reconcile.Request {
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for _, r := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: r.Namespace, Name: r.Name}})
	}
	return reqs
}

func ByTarget(c client.Reader, kind v1alpha1.WorkloadKind) handler.EventHandler {
	return configsWhere(c, IndexTarget, func(o client.Object) string { return TargetKey(kind, o.GetName()) })
}

func ByName(c client.Reader, index string) handler.EventHandler {
	return configsWhere(c, index, client.Object.GetName)
}

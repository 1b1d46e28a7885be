package main

import (
	"context"
	"fmt"

	imagev1 "github.com/fluxcd/image-reflector-controller/api/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	rollgatev1alpha1 "github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/controller"
	"github.com/rollgate/rollgate/internal/gitwrite"
	"github.com/rollgate/rollgate/internal/kube"
)

// newScheme knows the built-in Kubernetes types and rollgate's own.
func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(rollgatev1alpha1.AddToScheme(s))
	utilruntime.Must(imagev1.AddToScheme(s)) // Flux's ImagePolicy, an optional source
	return s
}

// newManager builds the controller-runtime manager: cache scoped to the chosen namespaces, metrics
// endpoint (plain or authenticated), health probes and leader election.
func newManager(ctx context.Context, cfg *rest.Config, o options) (ctrl.Manager, error) {
	metrics := metricsserver.Options{BindAddress: o.MetricsAddr, SecureServing: o.MetricsSecure}
	if o.MetricsSecure {
		// The scrape must present a token allowed to GET /metrics (see config/rbac/metrics_*).
		metrics.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	// Workloads are all watched, and cached whole only while a config names them; of the
	// ConfigMaps only the labelled ones, the signals, are cached, and pods not at all.
	trim := kube.NewCacheTrim()
	cacheOpts := trim.CacheOptions()
	if !o.Shard.Empty() {
		// A shard sees only its own configs: every watch, index and controller works on them alone.
		// Workloads and sources stay visible, since any config may name any of them; the shard
		// caches whole only the workloads its own configs name.
		cacheOpts.ByObject[&rollgatev1alpha1.RollingUpgradeConfig{}] = cache.ByObject{Label: o.Shard}
	}
	if len(o.Namespaces) > 0 {
		cacheOpts.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range o.Namespaces {
			cacheOpts.DefaultNamespaces[ns] = cache.Config{}
		}
	}

	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  newScheme(),
		Metrics:                 metrics,
		HealthProbeBindAddress:  o.ProbeAddr,
		PprofBindAddress:        o.PprofAddr,
		LeaderElection:          o.LeaderElect,
		LeaderElectionID:        o.LeaderElectionID,
		LeaderElectionNamespace: o.LeaderElectionNamespace,
		// The new leader may start at once when the old one stops cleanly.
		LeaderElectionReleaseOnCancel: true,
		Cache:                         cacheOpts,
		// Several workers and a deadline on each reconcile: no config can hold the others up. A
		// panic fails its own reconcile only (and the engine reports it on the config).
		Controller: config.Controller{MaxConcurrentReconciles: o.Concurrency, ReconciliationTimeout: o.ReconcileTimeout,
			RecoverPanic: ptr.To(true)},
	})
	if err != nil {
		return nil, fmt.Errorf("creating the manager: %w", err)
	}
	gitwrite.UseTransport(o.GitAllow.Transport(), o.GitMaxBytes)
	gitwrite.UseResolver(o.GitAllow.Resolve)
	prom, err := o.prometheus()
	if err != nil {
		return nil, err
	}
	tee, err := addNotifications(mgr, o.Notify)
	if err != nil {
		return nil, err
	}
	if err := controller.Setup(ctx, mgr, controller.Config{Controllers: o.Controllers, Clock: clock.RealClock{},
		Tags: o.registry(), Shard: o.Shard, CacheTrim: trim, Metrics: prom, Concurrency: o.Concurrency, Calendars: o.Calendars, CloudIdentity: o.RegistryCloudIdentity, ImagePolicies: o.ImagePolicies,
		ReceiverAddr: o.ReceiverAddr, Receivers: o.Receivers,
		Notify: tee}); err != nil {
		return nil, fmt.Errorf("setting up the controllers: %w", err)
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, fmt.Errorf("adding the health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return nil, fmt.Errorf("adding the readiness check: %w", err)
	}
	return mgr, nil
}

package controller

import (
	"context"
	"fmt"
	"slices"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/labels"
	eventsclient "k8s.io/client-go/kubernetes/typed/events/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/rollgate/rollgate/internal/controller/appversion"
	"github.com/rollgate/rollgate/internal/controller/calendar"
	"github.com/rollgate/rollgate/internal/controller/engine"
	"github.com/rollgate/rollgate/internal/controller/gitwriteback"
	"github.com/rollgate/rollgate/internal/controller/podgate"
	"github.com/rollgate/rollgate/internal/controller/renderer"
	"github.com/rollgate/rollgate/internal/gitwrite"
	"github.com/rollgate/rollgate/internal/kube"
	"github.com/rollgate/rollgate/internal/promquery"
	"github.com/rollgate/rollgate/internal/receiver"
	"github.com/rollgate/rollgate/internal/registry"
	"github.com/rollgate/rollgate/internal/writeback"
)

// Names of the controllers, for the manager's --controllers flag.
const (
	ControllerRollout            = "rollout"
	ControllerRenderer           = "renderer"
	ControllerApplicationVersion = "applicationversion"
	ControllerGitWriteBack       = "gitwriteback"
)

// AllControllers is the default set.
var AllControllers = []string{ControllerRollout, ControllerRenderer, ControllerApplicationVersion, ControllerGitWriteBack}

// Config is what the controllers take from the manager.
type Config struct {
	// Controllers to run, from AllControllers.
	Controllers []string
	Clock       clock.PassiveClock
	// Tags lists the tags of the registry sources.
	Tags registry.TagLister
	// Shard selects the ApplicationVersions whose status this manager writes; nil or empty: all.
	// (The manager's cache selects its configs.)
	Shard labels.Selector
	// Metrics is the cluster admin's Prometheus that spec.analysis queries; nil: none, and a
	// config with an analysis starts no version.
	Metrics promquery.Querier
	// ImagePolicies: the engine may watch Flux's ImagePolicies (it does when the cluster serves
	// them).
	ImagePolicies bool
	// CloudIdentity: the registries of the clouds are read with the manager's own cloud identity,
	// after the workloads' pull secrets (registry.CloudIdentity).
	CloudIdentity bool
	// Calendars: RolloutCalendars apply; the manager watches them (cluster-wide) and reads the
	// labels of the namespaces they select by. Off for a manager without cluster-wide rights.
	Calendars bool
	// Concurrency is the workers of each controller; half of the engine's may wait for Metrics or
	// a registry look-up at once.
	Concurrency int
	// CacheTrim is the manager's cache transform, if it is one: it is told which workloads the
	// configs name.
	CacheTrim *kube.CacheTrim
	// Notify, if set, is handed every event the controllers record (notifications); it must not
	// block.
	Notify func(*eventsv1.Event)
	// ReceiverAddr, if set, is where the engine takes the registries' push notifications of
	// Receivers (internal/receiver).
	ReceiverAddr string
	Receivers    []receiver.Receiver
}

// Setup registers the field indexes and the chosen controllers with the manager.
func Setup(ctx context.Context, mgr ctrl.Manager, cfg Config) error {
	for _, n := range cfg.Controllers {
		if !slices.Contains(AllControllers, n) {
			return fmt.Errorf("unknown controller %q (known: %v)", n, AllControllers)
		}
	}
	if err := kube.SetupIndexes(ctx, mgr); err != nil {
		return fmt.Errorf("registering indexes: %w", err)
	}
	if cfg.CacheTrim != nil {
		if err := cfg.CacheTrim.Track(ctx, mgr.GetCache()); err != nil {
			return fmt.Errorf("tracking the workloads configs name: %w", err)
		}
	}
	events, err := eventsclient.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return fmt.Errorf("the client of events: %w", err)
	}
	recorder := kube.NewEventRecorder(events, mgr.GetScheme(), clock.RealClock{}, "rollgate")
	recorder.Tee = cfg.Notify
	if err := mgr.Add(recorder); err != nil {
		return err
	}
	if slices.Contains(cfg.Controllers, ControllerRollout) {
		if err := setupEngine(ctx, mgr, cfg, recorder); err != nil {
			return err
		}
	}
	if slices.Contains(cfg.Controllers, ControllerRenderer) {
		if err := (&renderer.RendererReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Clock: cfg.Clock}).SetupWithManager(mgr); err != nil {
			return err
		}
	}
	if slices.Contains(cfg.Controllers, ControllerGitWriteBack) {
		r := &gitwriteback.GitWriteBackReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(),
			Recorder: recorder, Clock: cfg.Clock, CredentialsTTL: 30 * time.Second,
			Queue: &writeback.Queue{Write: gitwrite.Write, Clock: clock.RealClock{}}}
		if err := r.SetupWithManager(ctx, mgr); err != nil {
			return err
		}
		if err := setupWriteBackStatus(mgr, cfg); err != nil {
			return err
		}
	}
	if slices.Contains(cfg.Controllers, ControllerApplicationVersion) {
		r := &appversion.ApplicationVersionReconciler{Client: mgr.GetClient(), Clock: cfg.Clock}
		if err := r.SetupWithManager(mgr, cfg.Shard); err != nil {
			return err
		}
	}
	return nil
}

// setupWriteBackStatus registers the writer of the GitWriteBacks' status. Of the managers that
// serve shards, the one that serves configs without a shard label writes it, from every config of
// the namespace as the API server lists them, and looks again each minute: the GitWriteBack's
// configs may be other shards', whose changes it does not see.
func setupWriteBackStatus(mgr ctrl.Manager, cfg Config) error {
	r := &gitwriteback.StatusReconciler{Client: mgr.GetClient(), Configs: mgr.GetClient(), Clock: cfg.Clock}
	if cfg.Shard != nil && !cfg.Shard.Empty() {
		if !cfg.Shard.Matches(labels.Set{}) {
			return nil
		}
		r.Configs, r.Resync = mgr.GetAPIReader(), time.Minute
	}
	return r.SetupWithManager(mgr)
}

// setupEngine registers the rollout engine, the RolloutCalendars' status when calendars apply, and
// the answerer of rollgate's readiness gate.
func setupEngine(ctx context.Context, mgr ctrl.Manager, cfg Config, recorder events.EventRecorder) error {
	r := &engine.RollingUpgradeConfigReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(),
		Recorder: recorder, Clock: cfg.Clock, Metrics: cfg.Metrics, Waits: engine.NewWaitSlots(cfg.Concurrency), Calendars: cfg.Calendars,
		ImagePolicies: cfg.ImagePolicies,
		Tags:          &registry.Cache{Lister: cfg.Tags, Clock: cfg.Clock}}
	if cfg.CloudIdentity {
		r.CloudIdentity = &registry.CloudIdentity{Clock: cfg.Clock, Log: ctrl.Log.WithName("cloud-identity")}
	}
	if err := r.SetupWithManager(ctx, mgr); err != nil {
		return err
	}
	if cfg.ReceiverAddr != "" {
		if err := mgr.Add(receiver.Server{Addr: cfg.ReceiverAddr, Handler: receiver.NewHandler(cfg.Receivers, r.Pushed)}); err != nil {
			return err
		}
	}
	if cfg.Calendars {
		if err := (&calendar.RolloutCalendarReconciler{Client: mgr.GetClient(), Clock: cfg.Clock}).SetupWithManager(mgr); err != nil {
			return err
		}
	}
	// One manager answers the gates of StatefulSets no config upgrades in place: the one that
	// serves the configs without a shard label (every config, when it is the only one).
	if cfg.Shard == nil || cfg.Shard.Matches(labels.Set{}) {
		g := &podgate.GateReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: recorder, Clock: cfg.Clock}
		if err := g.SetupWithManager(mgr); err != nil {
			return err
		}
	}
	return nil
}

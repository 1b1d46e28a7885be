package controllers

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/rollgate/rollgate/controllers/registry"
)

// Names of the controllers, for the manager's --controllers flag.
const (
	ControllerRollout            = "rollout"
	ControllerRenderer           = "renderer"
	ControllerApplicationVersion = "applicationversion"
)

// AllControllers is the default set.
var AllControllers = []string{ControllerRollout, ControllerRenderer, ControllerApplicationVersion}

// Setup registers the field indexes and the chosen controllers with the manager. tags lists the tags
// of the registry sources.
func Setup(ctx context.Context, mgr ctrl.Manager, names []string, clk clock.PassiveClock, tags registry.TagLister) error {
	for _, n := range names {
		if !slices.Contains(AllControllers, n) {
			return fmt.Errorf("unknown controller %q (known: %v)", n, AllControllers)
		}
	}
	if err := setupIndexes(ctx, mgr); err != nil {
		return fmt.Errorf("registering indexes: %w", err)
	}
	if slices.Contains(names, ControllerRollout) {
		r := &RollingUpgradeConfigReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(),
			Recorder: mgr.GetEventRecorder("rollgate"), Clock: clk,
			Tags: &registry.Cache{Lister: tags, Clock: clk}}
		if err := r.SetupWithManager(ctx, mgr); err != nil {
			return err
		}
	}
	if slices.Contains(names, ControllerRenderer) {
		if err := (&RendererReconciler{Client: mgr.GetClient(), Clock: clk}).SetupWithManager(mgr); err != nil {
			return err
		}
	}
	if slices.Contains(names, ControllerApplicationVersion) {
		if err := (&ApplicationVersionReconciler{Client: mgr.GetClient(), Clock: clk}).SetupWithManager(mgr); err != nil {
			return err
		}
	}
	return nil
}

package engine

import (
	"context"
	"sync"
	"time"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/analysis"
	"github.com/rollgate/rollgate/internal/promquery"
	"github.com/rollgate/rollgate/internal/rollout"
)

// errNoPrometheus is the measurement of a manager without --prometheus-url.
const errNoPrometheus = "the manager has no Prometheus to query (its flag --prometheus-url)"

// errBusy is the measurement of a config that found every slot taken (waitSlots).
const errBusy = "not measured: " + allWaiting + "; measured again an interval later"

// measure runs the metric checks due for the decision at now (rollout.MeasurementsDue), all at
// once: a Prometheus that does not answer holds the reconcile for one query timeout, not one per
// check, and no more reconciles than slots allows wait for it. A query that fails is an answer
// too, and so is a slot not found: the decision counts it against the check's error limit.
func measure(ctx context.Context, q promquery.Querier, slots WaitSlots, ruc *v1alpha1.RollingUpgradeConfig, w *rollout.Workload, now time.Time) map[string]analysis.Measurement {
	due := rollout.MeasurementsDue(ruc, w, now)
	if len(due) == 0 {
		return nil
	}
	got := make([]analysis.Measurement, len(due))
	if !slots.take() {
		for i := range got {
			got[i] = analysis.Measurement{Err: errBusy}
		}
	} else {
		defer slots.give()
		vars := rollout.QueryVars(ruc, rollout.AnnotationsOf(ruc).TargetImage, w.Container)
		var wg sync.WaitGroup
		for i, m := range due {
			wg.Go(func() { got[i] = measureOne(ctx, q, m, vars, now) })
		}
		wg.Wait()
	}
	out := make(map[string]analysis.Measurement, len(due))
	for i, m := range due {
		out[m.Name] = got[i]
	}
	return out
}

func measureOne(ctx context.Context, q promquery.Querier, m v1alpha1.MetricCheck, vars analysis.Vars, now time.Time) analysis.Measurement {
	if q == nil {
		return analysis.Measurement{Err: errNoPrometheus}
	}
	query, err := analysis.Render(m.Query, vars)
	if err != nil {
		return analysis.Measurement{Err: err.Error()}
	}
	v, err := q.Query(ctx, query, now)
	if err != nil {
		return analysis.Measurement{Err: err.Error()}
	}
	return analysis.Measurement{Value: v}
}

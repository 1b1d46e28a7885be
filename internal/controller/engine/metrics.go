package engine

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/inplace"
	"github.com/rollgate/rollgate/internal/rollout"
)

// The manager's rollout metrics, registered next to controller-runtime's own. Labels are per config
// (namespace, name) and, for outcomes, the result: nothing per version or per pod, so the series
// grow with the number of configs only.
//
// They are kept as one small record per config (configSeries) and turned into series at scrape
// time, rather than as client_golang vectors: a vector keeps a whole metric object with its label
// pairs for each of the nine series of a config, 6.3 KB a config (31 MB at 5,000 configs), and
// forgets a config by scanning every series (DeletePartialMatch), which made deleting 5,000 configs
// take seconds of CPU. A record is a few hundred bytes and is forgotten by one map delete.

// Results of a rollout, the values of the result label.
const (
	resultSuccess  = "success"
	resultRollback = "rollback"
)

var configLabels = []string{"namespace", "name"}

var (
	rolloutDurationBuckets    = []float64{5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600}
	podUpgradeDurationBuckets = []float64{1, 2, 5, 10, 20, 30, 60, 120, 300, 600}

	rolloutDurationDesc = prometheus.NewDesc("rolling_upgrade_duration_seconds",
		"Time from the start of a rollout to its health verdict: healthy (result=success) or rolled back (result=rollback).",
		append(configLabels, "result"), nil)
	podUpgradeDurationDesc = prometheus.NewDesc("pod_upgrade_duration_seconds",
		"Time from the creation of a pod running the new version to its Ready condition, observed when the rollout's health verdict is reached.",
		configLabels, nil)
	rolloutActiveDesc = prometheus.NewDesc("rolling_upgrade_active",
		"1 while a rollout or its rollback is being watched.", configLabels, nil)
	rolloutSuccessDesc = prometheus.NewDesc("rolling_upgrade_success_total",
		"Rollouts that passed their health check.", configLabels, nil)
	rolloutFailureDesc = prometheus.NewDesc("rolling_upgrade_failure_total",
		"Rollouts that failed their health check (each is rolled back).", configLabels, nil)
	rolloutRollbacksDesc = prometheus.NewDesc("rolling_upgrade_rollbacks_total",
		"Rollbacks started: failed health checks and targets removed by hand mid-check.", configLabels, nil)
	circuitOpenDesc = prometheus.NewDesc("rolling_upgrade_circuit_open",
		"1 while the circuit breaker of the config is open.", configLabels, nil)
	versionPendingDesc = prometheus.NewDesc("rolling_upgrade_pending",
		"1 while a version is held (phase Pending); rolling_upgrade_waiting says by what.", configLabels, nil)
	versionWaitingDesc = prometheus.NewDesc("rolling_upgrade_waiting",
		"1 while a version is held by a gate, labelled with it: before its start VersionHeld (the maintenance window), Frozen, AwaitingReleaseAge, AwaitingApproval, ImageNotFound, Staggered or AwaitingRolloutSlot; "+
			"before its verdict Soaking, Analyzing (more measurements needed) or AnalysisInconclusive (Prometheus cannot answer); absent otherwise.",
		append(configLabels, "reason"), nil)
	rolloutDeadlineDesc = prometheus.NewDesc("rolling_upgrade_deadline_timestamp_seconds",
		"While a rollout or its rollback is in flight: the Unix time its health timeout ends. A rollout in flight long after it is stuck.",
		configLabels, nil)
	conditionDesc = prometheus.NewDesc("rolling_upgrade_condition",
		"1 for each condition of the config (Ready, Stalled, Reconciling, GitWriteBack), labelled with its type and status (True, False, Unknown), as the config's status last written says.",
		append(configLabels, "type", "status"), nil)
	infoDesc = prometheus.NewDesc("rolling_upgrade_info",
		"1, labelled with the versions the config's status names: current_version (the last that passed its check), target_version (in flight or held) "+
			"and last_failed_version (the newest on the failed list); empty for none. An alert names them by it.",
		append(configLabels, "current_version", "target_version", "last_failed_version"), nil)
	heldSinceDesc = prometheus.NewDesc("rolling_upgrade_held_since_timestamp_seconds",
		"While a gate holds a version (status.hold): the Unix time some gate first held that version, labelled with the version and the gate that holds it now.",
		append(configLabels, "version", "gate"), nil)
	inPlaceOutSinceDesc = prometheus.NewDesc("rolling_upgrade_inplace_pod_out_since_timestamp_seconds",
		"While a pod of an in-place upgrade is out of its Service by rollgate's readiness gate (draining, changing, or failed): the Unix time the one out longest left it.",
		configLabels, nil)
)

// configMetrics are the rollout metrics of every config the manager has seen.
var configMetrics = newRolloutMetrics()

func init() {
	metrics.Registry.MustRegister(configMetrics)
}

// rolloutMetrics is a prometheus.Collector of the rollout series of every config.
type rolloutMetrics struct {
	mu      sync.Mutex
	configs map[types.NamespacedName]*configSeries
}

// configSeries is what the series of one config say. Counters and histograms exist at zero from
// the first sight of a config: a first increment from nothing is invisible to rate() and increase().
type configSeries struct {
	active, circuitOpen, pending bool
	held                         string  // what holds the version (rollout.HoldReason); "" when nothing does
	heldVersion, heldGate        string  // status.hold's version and gate; "" when no gate holds one
	heldSince                    float64 // Unix seconds status.hold counts from; 0 when no gate holds one
	current, target, lastFailed  string  // status.currentVersion, targetVersion and the newest failedVersions
	conditions                   []conditionStatus
	deadline                     float64 // Unix seconds; 0 while nothing is in flight
	outSince                     float64 // Unix seconds a pod changed in place left its Service; 0 for none
	success, failure, rollbacks  uint64
	durationSuccess              histogram
	durationRollback             histogram
	podUpgrades                  histogram
}

// conditionStatus is a condition's type and status, all its series says of it.
type conditionStatus struct{ typ, status string }

func newConfigSeries() *configSeries {
	return &configSeries{durationSuccess: newHistogram(rolloutDurationBuckets),
		durationRollback: newHistogram(rolloutDurationBuckets), podUpgrades: newHistogram(podUpgradeDurationBuckets)}
}

// histogram counts observations per bucket (not cumulative: an observation adds to one count).
type histogram struct {
	bounds []float64 // upper bounds, shared by every histogram of a metric
	counts []uint64
	count  uint64
	sum    float64
}

func newHistogram(bounds []float64) histogram {
	return histogram{bounds: bounds, counts: make([]uint64, len(bounds))}
}

func (h *histogram) observe(v float64) {
	for i, b := range h.bounds {
		if v <= b {
			h.counts[i]++
			break
		}
	}
	h.count++
	h.sum += v
}

func (h *histogram) metric(desc *prometheus.Desc, labels ...string) prometheus.Metric {
	cumulative := make(map[float64]uint64, len(h.bounds))
	var n uint64
	for i, b := range h.bounds {
		n += h.counts[i]
		cumulative[b] = n
	}
	return prometheus.MustNewConstHistogram(desc, h.count, h.sum, cumulative, labels...)
}

func newRolloutMetrics() *rolloutMetrics {
	return &rolloutMetrics{configs: map[types.NamespacedName]*configSeries{}}
}

// record updates the metrics of one config after its decision was written; podUpgrades are the
// pod upgrade times measured when a rollout ended, or as each pod changed in place came through. Outcomes are counted from the decision's
// Outcome, which only a decision that moves the update-phase annotation out of a health check has;
// that move is written once, so a decision repeated after a failed write counts nothing twice.
func (m *rolloutMetrics) record(ruc *v1alpha1.RollingUpgradeConfig, d rollout.Decision, now time.Time, podUpgrades []time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	key := types.NamespacedName{Namespace: ruc.Namespace, Name: ruc.Name}
	s := m.configs[key]
	if s == nil {
		s = newConfigSeries()
		m.configs[key] = s
	}
	st := d.Status
	s.active = st.Phase == v1alpha1.PhaseInProgress || st.Phase == v1alpha1.PhaseRollingBack
	s.circuitOpen = st.CircuitOpen
	s.pending = st.Phase == v1alpha1.PhasePending
	s.held = rollout.HoldReason(&st)
	s.heldVersion, s.heldGate, s.heldSince = "", "", 0
	if h := st.Hold; h != nil && h.Since != nil {
		s.heldVersion, s.heldGate, s.heldSince = h.Version, string(h.Gate), float64(h.Since.Unix())
	}
	s.current, s.target, s.lastFailed = st.CurrentVersion, st.TargetVersion, ""
	if n := len(st.FailedVersions); n > 0 {
		s.lastFailed = st.FailedVersions[n-1]
	}
	s.conditions = s.conditions[:0]
	for _, c := range st.Conditions {
		s.conditions = append(s.conditions, conditionStatus{typ: c.Type, status: string(c.Status)})
	}
	s.deadline = 0
	if t, ok := rollout.Deadline(ruc.Spec, d.Annotations, st.HealthCheck); s.active && ok {
		s.deadline = float64(t.Unix())
	}
	s.outSince = oldestOutOfService(st.InPlace)
	for _, p := range podUpgrades {
		s.podUpgrades.observe(p.Seconds())
	}
	s.observeOutcome(d, now)
}

// oldestOutOfService is when the pod out of service longest (draining, changing or failed) left
// service, in Unix seconds, or 0.
func oldestOutOfService(ip *v1alpha1.InPlaceStatus) float64 {
	if ip == nil {
		return 0
	}
	var since float64
	for _, p := range ip.Pods {
		switch inplace.State(p.State) {
		case inplace.StateDraining, inplace.StateChanging, inplace.StateFailed:
			if p.Since != nil && (since == 0 || float64(p.Since.Unix()) < since) {
				since = float64(p.Since.Unix())
			}
		}
	}
	return since
}

// observeOutcome counts the verdict a decision reached, if any, and how long its rollout took.
func (s *configSeries) observeOutcome(d rollout.Decision, now time.Time) {
	duration := &s.durationSuccess
	switch d.Outcome {
	case rollout.OutcomeHealthy:
		s.success++
	case rollout.OutcomeFailed:
		s.failure++
		s.rollbacks++
		duration = &s.durationRollback
	case rollout.OutcomeAbandoned:
		// A target removed by hand mid-check is rolled back without a verdict on the version; a
		// config retargeted mid-check touches no workload.
		if d.Annotations.Step != rollout.StepRollingBack {
			return
		}
		s.rollbacks++
		duration = &s.durationRollback
	default:
		return
	}
	if !d.Rollout.Started.IsZero() {
		duration.observe(now.Sub(d.Rollout.Started).Seconds())
	}
}

// forget removes every series of a deleted config, so no stale gauge stays at 1.
func (m *rolloutMetrics) forget(namespace, name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.configs, types.NamespacedName{Namespace: namespace, Name: name})
}

// Describe implements prometheus.Collector.
func (m *rolloutMetrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{rolloutDurationDesc, podUpgradeDurationDesc, rolloutActiveDesc, rolloutSuccessDesc,
		rolloutFailureDesc, rolloutRollbacksDesc, circuitOpenDesc, versionPendingDesc, versionWaitingDesc, rolloutDeadlineDesc, inPlaceOutSinceDesc,
		conditionDesc, infoDesc, heldSinceDesc} {
		ch <- d
	}
}

// Collect implements prometheus.Collector. The series are made under the lock and sent after it,
// so a slow scrape never holds up a reconcile.
func (m *rolloutMetrics) Collect(ch chan<- prometheus.Metric) {
	for _, metric := range m.series() {
		ch <- metric
	}
}

func (m *rolloutMetrics) series() []prometheus.Metric {
	gauge := func(v bool) float64 {
		if v {
			return 1
		}
		return 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]prometheus.Metric, 0, 13*len(m.configs))
	for key, s := range m.configs {
		ns, name := key.Namespace, key.Name
		out = append(out,
			prometheus.MustNewConstMetric(rolloutActiveDesc, prometheus.GaugeValue, gauge(s.active), ns, name),
			prometheus.MustNewConstMetric(circuitOpenDesc, prometheus.GaugeValue, gauge(s.circuitOpen), ns, name),
			prometheus.MustNewConstMetric(versionPendingDesc, prometheus.GaugeValue, gauge(s.pending), ns, name),
			prometheus.MustNewConstMetric(rolloutSuccessDesc, prometheus.CounterValue, float64(s.success), ns, name),
			prometheus.MustNewConstMetric(rolloutFailureDesc, prometheus.CounterValue, float64(s.failure), ns, name),
			prometheus.MustNewConstMetric(rolloutRollbacksDesc, prometheus.CounterValue, float64(s.rollbacks), ns, name),
			s.durationSuccess.metric(rolloutDurationDesc, ns, name, resultSuccess),
			s.durationRollback.metric(rolloutDurationDesc, ns, name, resultRollback),
			s.podUpgrades.metric(podUpgradeDurationDesc, ns, name),
			prometheus.MustNewConstMetric(infoDesc, prometheus.GaugeValue, 1, ns, name, s.current, s.target, s.lastFailed))
		for _, c := range s.conditions {
			out = append(out, prometheus.MustNewConstMetric(conditionDesc, prometheus.GaugeValue, 1, ns, name, c.typ, c.status))
		}
		if s.heldSince != 0 {
			out = append(out, prometheus.MustNewConstMetric(heldSinceDesc, prometheus.GaugeValue, s.heldSince, ns, name, s.heldVersion, s.heldGate))
		}
		if s.deadline != 0 {
			out = append(out, prometheus.MustNewConstMetric(rolloutDeadlineDesc, prometheus.GaugeValue, s.deadline, ns, name))
		}
		if s.outSince != 0 {
			out = append(out, prometheus.MustNewConstMetric(inPlaceOutSinceDesc, prometheus.GaugeValue, s.outSince, ns, name))
		}
		if s.held != "" {
			out = append(out, prometheus.MustNewConstMetric(versionWaitingDesc, prometheus.GaugeValue, 1, ns, name, s.held))
		}
	}
	return out
}

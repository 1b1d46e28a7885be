package rollout

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rollgate/rollgate/api/v1alpha1"
)

func annotated(kv ...string) func(*v1alpha1.RollingUpgradeConfig) {
	return func(c *v1alpha1.RollingUpgradeConfig) {
		for i := 0; i+1 < len(kv); i += 2 {
			c.Annotations[kv[i]] = kv[i+1]
		}
	}
}

func failedList(versions ...string) func(*v1alpha1.RollingUpgradeConfig) {
	return func(c *v1alpha1.RollingUpgradeConfig) { c.Status.FailedVersions = versions }
}

// A person's reject and retry annotations act once per value, say who asked in the history and
// an event, wait while another rollout is in flight, and a value that names nothing to act on
// gets one Warning and changes nothing else.
func TestRejectAndRetryRequests(t *testing.T) {
	at := metav1.NewTime(now)
	inCheck := inFlight(StepHealthCheck, repo+":1.1.0", now.Add(-time.Minute))
	rejecting := func(v string) func(*v1alpha1.RollingUpgradeConfig) {
		return annotated(v1alpha1.RejectAnnotation, v, v1alpha1.RejectedByAnnotation, "alice", v1alpha1.RejectReasonAnnotation, "breaks checkout")
	}
	retrying := func(v string) func(*v1alpha1.RollingUpgradeConfig) {
		return annotated(v1alpha1.RetryAnnotation, v, v1alpha1.RetriedByAnnotation, "carol")
	}
	rejected110 := []v1alpha1.VersionHistoryEntry{{Version: "1.1.0", Image: repo + ":1.1.0", AppliedAt: at, Status: v1alpha1.ResultRejected, RequestedBy: "alice"}}
	retried110 := []v1alpha1.VersionHistoryEntry{{Version: "1.1.0", Image: repo + ":1.1.0", AppliedAt: at, Status: v1alpha1.ResultRetried, RequestedBy: "carol"}}
	healthy110 := []v1alpha1.VersionHistoryEntry{{Version: "1.1.0", Image: repo + ":1.1.0", AppliedAt: metav1.NewTime(now.Add(-time.Minute)), Status: v1alpha1.ResultHealthy}}
	type want struct {
		step        string   // the update-phase annotation the decision writes
		failed      []string // status.failedVersions
		lastReject  string
		lastRetry   string
		history     []v1alpha1.VersionHistoryEntry
		events      string
		warningHas  string // a part of the RequestIgnored warning
		targetImage string
	}
	for _, tc := range []struct {
		name       string
		cfg        *v1alpha1.RollingUpgradeConfig
		candidates []string
		workload   string
		want       want
	}{
		{name: "a held version rejected goes on the failed list, and nothing newer remains",
			cfg: config(current("1.0.0"), rejecting("1.1.0")), candidates: []string{"1.1.0"}, workload: "1.0.0",
			want: want{failed: []string{"1.1.0"}, lastReject: "1.1.0", events: v1alpha1.EventVersionRejected,
				history: []v1alpha1.VersionHistoryEntry{{Version: "1.1.0", Image: repo + ":1.1.0", AppliedAt: at, Status: v1alpha1.ResultRejected,
					RequestedBy: "alice", Reason: "breaks checkout"}}}},
		{name: "a rejection already acted on does nothing again",
			cfg:        config(current("1.0.0"), rejecting("1.1.0"), failedList("1.1.0"), func(c *v1alpha1.RollingUpgradeConfig) { c.Status.LastReject = "1.1.0" }),
			candidates: []string{"1.1.0"}, workload: "1.0.0",
			want: want{failed: []string{"1.1.0"}, lastReject: "1.1.0"}},
		{name: "the running version is not rejected",
			cfg: config(current("1.0.0"), rejecting("1.0.0")), candidates: []string{"1.0.0"}, workload: "1.0.0",
			want: want{lastReject: "1.0.0", events: v1alpha1.EventRequestIgnored, warningHas: "names the version that runs"}},
		{name: "a version on the failed list already is not rejected twice",
			cfg: config(current("1.0.0"), rejecting("1.1.0"), failedList("1.1.0")), candidates: []string{"1.1.0"}, workload: "1.0.0",
			want: want{failed: []string{"1.1.0"}, lastReject: "1.1.0", events: v1alpha1.EventRequestIgnored, warningHas: "on the failed list already"}},
		{name: "a value longer than any tag names no version",
			cfg: config(current("1.0.0"), rejecting(strings.Repeat("9", 300))), candidates: []string{"1.0.0"}, workload: "1.0.0",
			want: want{lastReject: strings.Repeat("9", MaxRequestLength), events: v1alpha1.EventRequestIgnored, warningHas: "is no image tag"}},
		{name: "a retried version leaves the failed list and rolls out in the same look",
			cfg: config(current("1.0.0"), retrying("1.1.0"), failedList("1.1.0")), candidates: []string{"1.1.0"}, workload: "1.0.0",
			want: want{step: StepHealthCheck, targetImage: repo + ":1.1.0", lastRetry: "1.1.0",
				events:  v1alpha1.EventVersionRetried + "," + v1alpha1.EventVersionAvailable + "," + v1alpha1.EventUpdateStarting,
				history: []v1alpha1.VersionHistoryEntry{{Version: "1.1.0", Image: repo + ":1.1.0", AppliedAt: at, Status: v1alpha1.ResultRetried, RequestedBy: "carol"}}}},
		{name: "a retry of a version not on the failed list is ignored",
			cfg: config(current("1.0.0"), retrying("1.3.0"), failedList("1.2.0")), candidates: []string{"1.0.0"}, workload: "1.0.0",
			want: want{failed: []string{"1.2.0"}, lastRetry: "1.3.0", events: v1alpha1.EventRequestIgnored, warningHas: "not on the failed list (1.2.0)"}},
		{name: "the version in flight rejected is rolled back",
			cfg:      config(current("1.0.0"), inCheck, rejecting("1.1.0"), func(c *v1alpha1.RollingUpgradeConfig) { c.Status.TargetVersion = "1.1.0" }),
			workload: "1.1.0",
			want: want{step: StepRollingBack, failed: []string{"1.1.0"}, lastReject: "1.1.0", events: v1alpha1.EventVersionRejected,
				history: []v1alpha1.VersionHistoryEntry{{Version: "1.1.0", Image: repo + ":1.1.0", AppliedAt: at, Status: v1alpha1.ResultRejected,
					RequestedBy: "alice", Reason: "breaks checkout"}}}},
		{name: "a rejection recorded before a crash still rolls the version in flight back, its annotation gone since",
			cfg: config(current("1.0.0"), inCheck, failedList("1.1.0"), func(c *v1alpha1.RollingUpgradeConfig) {
				c.Status.TargetVersion, c.Status.LastReject, c.Status.VersionHistory = "1.1.0", "1.1.0", rejected110
			}),
			workload: "1.1.0",
			want:     want{step: StepRollingBack, failed: []string{"1.1.0"}, history: rejected110}},
		{name: "a rejection recorded in the second its rollout started still rolls it back",
			cfg: config(current("1.0.0"), inFlight(StepHealthCheck, repo+":1.1.0", now), failedList("1.1.0"), func(c *v1alpha1.RollingUpgradeConfig) {
				c.Status.TargetVersion, c.Status.LastReject, c.Status.VersionHistory = "1.1.0", "1.1.0", rejected110
			}),
			workload: "1.1.0",
			want:     want{step: StepRollingBack, failed: []string{"1.1.0"}, history: rejected110}},
		{name: "a retry recorded in the second its rollout started is no verdict: the rollout is judged",
			cfg: config(current("1.0.0"), inFlight(StepHealthCheck, repo+":1.1.0", now), retrying("1.1.0"), func(c *v1alpha1.RollingUpgradeConfig) {
				c.Status.TargetVersion, c.Status.LastRetry, c.Status.VersionHistory = "1.1.0", "1.1.0", retried110
			}),
			workload: "1.1.0",
			want: want{lastRetry: "1.1.0", events: v1alpha1.EventUpdateComplete, targetImage: repo + ":1.1.0",
				history: append(slices.Clone(retried110), v1alpha1.VersionHistoryEntry{Version: "1.1.0", Image: repo + ":1.1.0", AppliedAt: at, Status: v1alpha1.ResultHealthy})}},
		{name: "a value that is no tag names no version",
			cfg: config(current("1.0.0"), rejecting("1.2.0; drop table")), candidates: []string{"1.0.0"}, workload: "1.0.0",
			want: want{lastReject: "1.2.0; drop table", events: v1alpha1.EventRequestIgnored, warningHas: "is no image tag"}},
		{name: "a rejection removed clears its record, so the version may be rejected again",
			cfg:        config(current("1.0.0"), func(c *v1alpha1.RollingUpgradeConfig) { c.Status.LastReject, c.Status.LastRetry = "1.1.0", "1.1.0" }),
			candidates: []string{"1.0.0"}, workload: "1.0.0",
			want: want{}},
		{name: "a version rejected, then retried, is judged when it rolls out again",
			cfg: config(current("1.0.0"), inCheck, rejecting("1.1.0"), func(c *v1alpha1.RollingUpgradeConfig) {
				c.Status.TargetVersion, c.Status.LastReject = "1.1.0", "1.1.0"
			}),
			workload: "1.1.0",
			want:     want{lastReject: "1.1.0", events: v1alpha1.EventUpdateComplete, targetImage: repo + ":1.1.0", history: healthy110}},
		{name: "a rejection of another version waits for the verdict of the rollout in flight",
			cfg:      config(current("1.0.0"), inCheck, rejecting("1.2.0"), func(c *v1alpha1.RollingUpgradeConfig) { c.Status.TargetVersion = "1.1.0" }),
			workload: "1.1.0",
			want:     want{events: v1alpha1.EventUpdateComplete, targetImage: repo + ":1.1.0", history: healthy110}},
		{name: "a retry waits for the verdict of the rollout in flight",
			cfg:      config(current("1.0.0"), inCheck, retrying("0.9.0"), failedList("0.9.0"), func(c *v1alpha1.RollingUpgradeConfig) { c.Status.TargetVersion = "1.1.0" }),
			workload: "1.1.0",
			want:     want{events: v1alpha1.EventUpdateComplete, targetImage: repo + ":1.1.0", failed: []string{"0.9.0"}, history: healthy110}},
		{name: "who approved a rollout is in the history entry of its verdict",
			cfg: config(current("1.0.0"), approval(v1alpha1.ApprovalRequired), inCheck,
				annotated(v1alpha1.ApproveAnnotation, "1.1.0", v1alpha1.ApprovedByAnnotation, "dave"), func(c *v1alpha1.RollingUpgradeConfig) { c.Status.TargetVersion = "1.1.0" }),
			workload: "1.1.0",
			want: want{events: v1alpha1.EventUpdateComplete, targetImage: repo + ":1.1.0",
				history: []v1alpha1.VersionHistoryEntry{{Version: "1.1.0", Image: repo + ":1.1.0", AppliedAt: metav1.NewTime(now.Add(-time.Minute)),
					Status: v1alpha1.ResultHealthy, RequestedBy: "dave"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(Input{Now: now, Config: tc.cfg, Workload: deploymentAt(tc.workload, healthy), Candidates: av(tc.candidates...)})
			var warning string
			for _, e := range d.Events {
				if e.Reason == v1alpha1.EventRequestIgnored {
					warning = e.Message
				}
			}
			got := want{step: d.Annotations.Step, failed: d.Status.FailedVersions, lastReject: d.Status.LastReject, lastRetry: d.Status.LastRetry,
				history: d.Status.VersionHistory, events: reasons(d.Events), targetImage: d.Annotations.TargetImage}
			if tc.want.warningHas != "" && strings.Contains(warning, tc.want.warningHas) {
				got.warningHas = tc.want.warningHas
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("(-want +got):\n%s\nwarning: %s", diff, warning)
			}
		})
	}
}

// A request is no rollout: the config rests as its last rollout left it.
func TestRestingPhasePassesOverRequests(t *testing.T) {
	at := metav1.NewTime(now)
	healthy := v1alpha1.VersionHistoryEntry{Version: "1.1.0", AppliedAt: at, Status: v1alpha1.ResultHealthy}
	rolledBack := v1alpha1.VersionHistoryEntry{Version: "1.2.0", AppliedAt: at, Status: v1alpha1.ResultRolledBack}
	rejected := v1alpha1.VersionHistoryEntry{Version: "1.3.0", AppliedAt: at, Status: v1alpha1.ResultRejected}
	retried := v1alpha1.VersionHistoryEntry{Version: "1.2.0", AppliedAt: at, Status: v1alpha1.ResultRetried}
	for _, tc := range []struct {
		name    string
		history []v1alpha1.VersionHistoryEntry
		want    v1alpha1.Phase
	}{
		{name: "a rejection of a version that never rolled out, after a healthy rollout, leaves it Completed", history: []v1alpha1.VersionHistoryEntry{healthy, rejected}, want: v1alpha1.PhaseCompleted},
		{name: "a retry after a healthy rollout leaves it Completed", history: []v1alpha1.VersionHistoryEntry{healthy, retried}, want: v1alpha1.PhaseCompleted},
		{name: "a retry after a rollback leaves it Idle", history: []v1alpha1.VersionHistoryEntry{healthy, rolledBack, retried}, want: v1alpha1.PhaseIdle},
		{name: "requests alone leave it Idle", history: []v1alpha1.VersionHistoryEntry{rejected, retried}, want: v1alpha1.PhaseIdle},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := restingPhase(&v1alpha1.RollingUpgradeConfigStatus{VersionHistory: tc.history}); got != tc.want {
				t.Errorf("restingPhase = %s, want %s", got, tc.want)
			}
		})
	}
}

// A version rejected while it rolled out did not succeed: once the workload is back on the current
// version, the config rests Idle, as after a failed check, never Completed.
func TestARejectedRolloutRolledBackRestsIdle(t *testing.T) {
	cfg := config(current("1.0.0"), inFlight(StepRollingBack, "", now.Add(-time.Minute)), failedList("1.1.0"), func(c *v1alpha1.RollingUpgradeConfig) {
		c.Status.Phase = v1alpha1.PhaseRollingBack
		c.Status.VersionHistory = []v1alpha1.VersionHistoryEntry{
			{Version: "1.0.0", Image: repo + ":1.0.0", AppliedAt: metav1.NewTime(now.Add(-time.Hour)), Status: v1alpha1.ResultHealthy},
			{Version: "1.1.0", Image: repo + ":1.1.0", AppliedAt: metav1.NewTime(now.Add(-time.Minute)), Status: v1alpha1.ResultRejected, RequestedBy: "alice"},
		}
	})
	d := Decide(Input{Now: now, Config: cfg, Workload: deploymentAt("1.0.0", healthy)})
	if d.Status.Phase != v1alpha1.PhaseIdle || d.Annotations.Step != "" {
		t.Errorf("phase %s, step %q; want Idle and no step (events %s)", d.Status.Phase, d.Annotations.Step, reasons(d.Events))
	}
}

package bookkeeping

import (
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rollgate/rollgate/api/v1alpha1"
)

var t0 = metav1.NewTime(time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC))

func TestSuccessResetsCounterAndCircuit(t *testing.T) {
	st := v1alpha1.RollingUpgradeConfigStatus{RollbackCount: 2, CircuitOpen: true, FailedVersions: []string{"1.2.0"},
		CurrentVersion: "1.1.0", CurrentImage: "r/app:1.1.0"}
	Success(&st, "1.3.0", "1.3.0", "r/app:1.3.0", t0, false, nil)
	if st.CurrentVersion != "1.3.0" || st.CurrentImage != "r/app:1.3.0" || st.RollbackCount != 0 || st.CircuitOpen {
		t.Errorf("status = %+v", st)
	}
	if !slices.Equal(st.FailedVersions, []string{"1.2.0"}) {
		t.Errorf("failed versions changed: %v", st.FailedVersions)
	}
	want := v1alpha1.VersionHistoryEntry{Version: "1.3.0", Image: "r/app:1.3.0", AppliedAt: t0, Status: v1alpha1.ResultHealthy}
	if len(st.VersionHistory) != 1 || st.VersionHistory[0] != want {
		t.Errorf("history = %+v", st.VersionHistory)
	}
}

func TestRollback(t *testing.T) {
	cases := []struct {
		name         string
		before       v1alpha1.RollingUpgradeConfigStatus
		version      string
		maxRollbacks int32
		wantFailed   []string
		wantCount    int32
		wantOpen     bool
		wantOpened   bool
	}{
		{"first rollback", v1alpha1.RollingUpgradeConfigStatus{}, "1.2.0", 3, []string{"1.2.0"}, 1, false, false},
		{"third rollback opens the circuit", v1alpha1.RollingUpgradeConfigStatus{RollbackCount: 2, FailedVersions: []string{"1.2.0", "1.2.1"}},
			"1.2.2", 3, []string{"1.2.0", "1.2.1", "1.2.2"}, 3, true, true},
		{"maxRollbacks 1 opens at once", v1alpha1.RollingUpgradeConfigStatus{}, "1.2.0", 1, []string{"1.2.0"}, 1, true, true},
		{"failed list has no duplicates", v1alpha1.RollingUpgradeConfigStatus{RollbackCount: 1, FailedVersions: []string{"1.2.0"}},
			"1.2.0", 3, []string{"1.2.0"}, 2, false, false},
		{"exact strings: v1.2.0 is another entry", v1alpha1.RollingUpgradeConfigStatus{FailedVersions: []string{"1.2.0"}},
			"v1.2.0", 3, []string{"1.2.0", "v1.2.0"}, 1, false, false},
		{"already open: not opened again", v1alpha1.RollingUpgradeConfigStatus{RollbackCount: 3, CircuitOpen: true},
			"1.4.0", 3, []string{"1.4.0"}, 4, true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := tc.before
			recorded, opened := Rollback(&st, tc.version, "r/app:"+tc.version, "", t0, tc.maxRollbacks, nil)
			if !recorded {
				t.Fatal("rollback not recorded")
			}
			if !slices.Equal(st.FailedVersions, tc.wantFailed) || st.RollbackCount != tc.wantCount ||
				st.CircuitOpen != tc.wantOpen || opened != tc.wantOpened {
				t.Errorf("failed=%v count=%d open=%v opened=%v", st.FailedVersions, st.RollbackCount, st.CircuitOpen, opened)
			}
			last := st.VersionHistory[len(st.VersionHistory)-1]
			if last.Version != tc.version || last.Status != v1alpha1.ResultRolledBack {
				t.Errorf("last history entry = %+v", last)
			}
		})
	}
}

func TestHistoryKeepsTheNewest50(t *testing.T) {
	var st v1alpha1.RollingUpgradeConfigStatus
	for i := range 60 {
		v := fmt.Sprintf("1.%d.0", i)
		Success(&st, v, v, "r/app", metav1.NewTime(t0.Add(time.Duration(i)*time.Hour)), false, nil)
	}
	if len(st.VersionHistory) != v1alpha1.MaxHistory {
		t.Fatalf("history has %d entries", len(st.VersionHistory))
	}
	if first, last := st.VersionHistory[0].Version, st.VersionHistory[49].Version; first != "1.10.0" || last != "1.59.0" {
		t.Errorf("history spans %s..%s, want 1.10.0..1.59.0", first, last)
	}
}

func TestResetCircuitKeepsFailedVersions(t *testing.T) {
	st := v1alpha1.RollingUpgradeConfigStatus{RollbackCount: 3, CircuitOpen: true, FailedVersions: []string{"1.2.0"}}
	ResetCircuit(&st)
	if st.RollbackCount != 0 || st.CircuitOpen || len(st.FailedVersions) != 1 {
		t.Errorf("status = %+v", st)
	}
}

// The failed list stays within its cap: versions at or below the current one (never candidates
// again) go first, lowest first, then the oldest; each dropped one is counted.
func TestFailedVersionsAreCapped(t *testing.T) {
	cases := []struct {
		name string
		// inputs
		current string
		failed  []string
		order   Order // nil: semver
		// expected
		wantDropped   []string
		wantDropCount int32
	}{
		{name: "below the cap nothing is dropped", current: "1.0.0", failed: versions("2.0.", 99)},
		{name: "over the cap the lowest version below the current one goes first", current: "1.5.0",
			failed: append([]string{"1.2.0", "1.1.0"}, versions("2.0.", 99)...), wantDropped: []string{"1.1.0"}, wantDropCount: 1},
		{name: "with none below the current one the oldest goes", current: "1.0.0",
			failed: versions("2.0.", 101), wantDropped: []string{"2.0.0"}, wantDropCount: 1},
		// Build numbers, the lowest the newest: 6000 is older than the running 5000 and goes; as
		// semver every one of 10..198 would be "below" 5000, and 10 would go.
		{name: "below the current one by the config's order, not by semver", current: "5000", order: descendingNumbers,
			failed: append([]string{"40", "6000"}, versions("1", 99)...), wantDropped: []string{"6000"}, wantDropCount: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := v1alpha1.RollingUpgradeConfigStatus{CurrentVersion: tc.current, FailedVersions: slices.Clone(tc.failed[:len(tc.failed)-1])}
			last := tc.failed[len(tc.failed)-1]
			Rollback(&st, last, "r/app:"+last, "", t0, 1000, tc.order)
			if len(st.FailedVersions) > v1alpha1.MaxFailedVersions {
				t.Errorf("%d failed versions, over the cap", len(st.FailedVersions))
			}
			for _, v := range tc.wantDropped {
				if slices.Contains(st.FailedVersions, v) {
					t.Errorf("%s was kept", v)
				}
			}
			if !slices.Contains(st.FailedVersions, last) {
				t.Errorf("the version that just failed, %s, was dropped", last)
			}
			if st.FailedVersionsDropped != tc.wantDropCount {
				t.Errorf("dropped count = %d, want %d", st.FailedVersionsDropped, tc.wantDropCount)
			}
		})
	}
}

func versions(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	return out
}

// A version forced down by hand puts the newer one it replaced on the failed list, so that
// automatic updates do not bring it back at once.
func TestForcedDowngradeFailsTheReplacedVersion(t *testing.T) {
	cases := []struct {
		name string
		// inputs
		current, next string
		forcedDown    bool
		// expected
		wantFailed []string
		wantReason string
	}{
		{name: "a downgrade fails the replaced version", current: "1.4.0", next: "1.3.0", forcedDown: true, wantFailed: []string{"1.4.0"},
			wantReason: "replaced 1.4.0 by hand, which is now on the failed list"},
		{name: "an upgrade fails nothing", current: "1.3.0", next: "1.4.0"},
		{name: "a first version fails nothing", current: "", next: "1.3.0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := v1alpha1.RollingUpgradeConfigStatus{CurrentVersion: tc.current}
			Success(&st, tc.next, tc.next, "r/app:"+tc.next, t0, tc.forcedDown, nil)
			if !slices.Equal(st.FailedVersions, tc.wantFailed) {
				t.Errorf("failed = %v, want %v", st.FailedVersions, tc.wantFailed)
			}
			if got := st.VersionHistory[0].Reason; got != tc.wantReason {
				t.Errorf("reason = %q, want %q", got, tc.wantReason)
			}
			if st.CurrentVersion != tc.next {
				t.Errorf("current = %s, want %s", st.CurrentVersion, tc.next)
			}
		})
	}
}

// A rejection puts the version on the failed list once and says who and why; a retry takes it off
// and says who; neither touches the counter or the circuit, and a retry of a version not on the
// list changes nothing.
func TestRejectAndRetry(t *testing.T) {
	st := v1alpha1.RollingUpgradeConfigStatus{RollbackCount: 1, CircuitOpen: true, FailedVersions: []string{"1.1.0"}}
	t1 := metav1.NewTime(t0.Add(time.Hour))
	Reject(&st, "1.2.0", "r/app:1.2.0", "alice", "breaks checkout", t0, nil)
	Reject(&st, "1.2.0", "r/app:1.2.0", "bob", "", t1, nil)
	if !Retry(&st, "1.1.0", "r/app:1.1.0", "carol", t1) || Retry(&st, "1.9.0", "r/app:1.9.0", "carol", t1) {
		t.Error("Retry reports a change wrongly")
	}
	want := v1alpha1.RollingUpgradeConfigStatus{RollbackCount: 1, CircuitOpen: true, FailedVersions: []string{"1.2.0"},
		VersionHistory: []v1alpha1.VersionHistoryEntry{
			{Version: "1.2.0", Image: "r/app:1.2.0", AppliedAt: t0, Status: v1alpha1.ResultRejected, RequestedBy: "alice", Reason: "breaks checkout"},
			{Version: "1.2.0", Image: "r/app:1.2.0", AppliedAt: t1, Status: v1alpha1.ResultRejected, RequestedBy: "bob"},
			{Version: "1.1.0", Image: "r/app:1.1.0", AppliedAt: t1, Status: v1alpha1.ResultRetried, RequestedBy: "carol"},
		}}
	if diff := cmp.Diff(want, st); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
}

// A request (a rejection or a retry) is no verdict on a rollout, even when it was recorded in the
// second the rollout started: the history keys verdicts by that second.
func TestRecordedPassesOverRequests(t *testing.T) {
	t1 := metav1.NewTime(t0.Add(time.Hour))
	healthy := v1alpha1.VersionHistoryEntry{Version: "1.1.0", Image: "r/app:1.1.0", AppliedAt: t0, Status: v1alpha1.ResultHealthy}
	retried := v1alpha1.VersionHistoryEntry{Version: "1.2.0", Image: "r/app:1.2.0", AppliedAt: t1, Status: v1alpha1.ResultRetried}
	rejected := v1alpha1.VersionHistoryEntry{Version: "1.2.0", Image: "r/app:1.2.0", AppliedAt: t1, Status: v1alpha1.ResultRejected}
	rolledBack := v1alpha1.VersionHistoryEntry{Version: "1.2.0", Image: "r/app:1.2.0", AppliedAt: t1, Status: v1alpha1.ResultRolledBack}
	type recorded struct {
		Version string
		Result  v1alpha1.RolloutResult
		OK      bool
	}
	for _, tc := range []struct {
		name    string
		history []v1alpha1.VersionHistoryEntry
		started metav1.Time
		want    recorded
	}{
		{name: "a retry recorded in the second its rollout started is no verdict",
			history: []v1alpha1.VersionHistoryEntry{healthy, retried}, started: t1},
		{name: "a rejection recorded in the second its rollout started is no verdict",
			history: []v1alpha1.VersionHistoryEntry{healthy, rejected}, started: t1},
		{name: "the verdict before a retry is still the verdict of its rollout",
			history: []v1alpha1.VersionHistoryEntry{healthy, retried}, started: t0,
			want: recorded{Version: "1.1.0", Result: v1alpha1.ResultHealthy, OK: true}},
		{name: "a verdict after a request is the verdict",
			history: []v1alpha1.VersionHistoryEntry{healthy, retried, rolledBack}, started: t1,
			want: recorded{Version: "1.2.0", Result: v1alpha1.ResultRolledBack, OK: true}},
		{name: "only requests: no rollout recorded",
			history: []v1alpha1.VersionHistoryEntry{rejected, retried}, started: t1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := v1alpha1.RollingUpgradeConfigStatus{VersionHistory: tc.history}
			var got recorded
			got.Version, got.Result, got.OK = Recorded(&st, tc.started.Time)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Recorded (-want +got):\n%s", diff)
			}
		})
	}
}

// A rollback recorded once is not recorded again when a person's request came after it, and the
// rollouts of a history leave the requests out.
func TestRequestsAfterAVerdictHideItFromNoOne(t *testing.T) {
	t1 := metav1.NewTime(t0.Add(time.Hour))
	rolledBack := v1alpha1.VersionHistoryEntry{Version: "1.2.0", Image: "r/app:1.2.0", AppliedAt: t1, Status: v1alpha1.ResultRolledBack}
	rejected := v1alpha1.VersionHistoryEntry{Version: "1.3.0", Image: "r/app:1.3.0", AppliedAt: t1, Status: v1alpha1.ResultRejected}
	st := &v1alpha1.RollingUpgradeConfigStatus{VersionHistory: []v1alpha1.VersionHistoryEntry{rolledBack, rejected},
		FailedVersions: []string{"1.2.0", "1.3.0"}, RollbackCount: 1}
	if recorded, _ := Rollback(st, "1.2.0", "r/app:1.2.0", "", t1, 3, nil); recorded || st.RollbackCount != 1 || len(st.VersionHistory) != 2 {
		t.Errorf("the rollback recorded again: recorded %v, rollbacks %d, history %d", recorded, st.RollbackCount, len(st.VersionHistory))
	}
	if got := Rollouts(st); len(got) != 1 || got[0] != rolledBack || len(st.VersionHistory) != 2 {
		t.Errorf("rollouts %+v, want the rollback only, the history untouched", got)
	}
}

// descendingNumbers orders decimal tags, the lowest the newest.
func descendingNumbers(a, b string) (int, bool) {
	x, errA := strconv.Atoi(a)
	y, errB := strconv.Atoi(b)
	if errA != nil || errB != nil {
		return 0, false
	}
	switch {
	case x > y:
		return -1, true
	case x < y:
		return 1, true
	}
	return 0, true
}

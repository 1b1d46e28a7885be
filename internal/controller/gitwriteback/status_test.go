package gitwriteback

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rollgate/rollgate/api/v1alpha1"
)

// A GitWriteBack's status gathers its configs': Ready False with the newest error while one
// cannot write, the newest commit, and who they are, as many as the API takes; configs of another
// GitWriteBack or namespace do not count.
func TestWriteBackSummary(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *metav1.Time { return &metav1.Time{Time: now.Add(d)} }
	gwb := &v1alpha1.GitWriteBack{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "fleet", Generation: 2}}
	config := func(name, gw string, written *v1alpha1.GitWriteBackStatus, cond *metav1.Condition) v1alpha1.RollingUpgradeConfig {
		c := v1alpha1.RollingUpgradeConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name}}
		if gw != "" {
			c.Spec.GitWriteBack = &v1alpha1.GitWriteBackReference{Name: gw}
		}
		c.Status.GitWriteBack = written
		if cond != nil {
			c.Status.Conditions = []metav1.Condition{*cond}
		}
		return c
	}
	failing := func(msg string, since time.Duration) *metav1.Condition {
		return &metav1.Condition{Type: v1alpha1.ConditionGitWriteBack, Status: metav1.ConditionFalse, Reason: v1alpha1.EventGitWriteBackFailed,
			Message: msg, LastTransitionTime: *at(since)}
	}
	written := &metav1.Condition{Type: v1alpha1.ConditionGitWriteBack, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonWritten}
	ready := func(status metav1.ConditionStatus, reason, msg string) []metav1.Condition {
		return []metav1.Condition{{Type: meta.ReadyCondition, Status: status, Reason: reason, Message: msg, ObservedGeneration: 2, LastTransitionTime: metav1.NewTime(now)}}
	}
	many := make([]v1alpha1.RollingUpgradeConfig, 0, v1alpha1.MaxListedConfigs+5)
	for i := range v1alpha1.MaxListedConfigs + 5 {
		many = append(many, config(fmt.Sprintf("app-%03d", i), "fleet", nil, nil))
	}
	for _, tc := range []struct {
		name    string
		configs []v1alpha1.RollingUpgradeConfig
		want    v1alpha1.WriteBackStatus
	}{
		{name: "no config names it",
			configs: []v1alpha1.RollingUpgradeConfig{config("web", "", nil, nil), config("api", "other", nil, nil)},
			want:    v1alpha1.WriteBackStatus{ObservedGeneration: 2, Conditions: ready("True", v1alpha1.ReasonUnused, "no RollingUpgradeConfig names it")}},
		{name: "every write lands: the newest commit",
			configs: []v1alpha1.RollingUpgradeConfig{
				config("web", "fleet", &v1alpha1.GitWriteBackStatus{Commit: "aaa", LastWrite: at(-time.Hour)}, written),
				config("api", "fleet", &v1alpha1.GitWriteBackStatus{Commit: "bbb", LastWrite: at(-time.Minute)}, written)},
			want: v1alpha1.WriteBackStatus{ObservedGeneration: 2, LastCommit: "bbb", LastWrite: at(-time.Minute), ConfigCount: 2, Configs: []string{"api", "web"},
				Conditions: ready("True", v1alpha1.ReasonWritten, "2 configs write through it; none fails; last commit bbb")}},
		{name: "two cannot write: the newest error",
			configs: []v1alpha1.RollingUpgradeConfig{
				config("web", "fleet", &v1alpha1.GitWriteBackStatus{Commit: "aaa", LastWrite: at(-time.Hour)}, failing("writing to Git failed: authentication required", -5*time.Minute)),
				config("api", "fleet", nil, failing("writing to Git failed: 403", -10*time.Minute)),
				config("cart", "fleet", nil, written)},
			want: v1alpha1.WriteBackStatus{ObservedGeneration: 2, LastCommit: "aaa", LastWrite: at(-time.Hour), ConfigCount: 3, FailingCount: 2,
				Configs: []string{"api", "cart", "web"}, LastError: "web: writing to Git failed: authentication required",
				Conditions: ready("False", v1alpha1.EventGitWriteBackFailed, "2 of 3 configs cannot write; the newest error: web: writing to Git failed: authentication required")}},
		{name: "more configs than the API takes names", configs: many,
			want: v1alpha1.WriteBackStatus{ObservedGeneration: 2, ConfigCount: int32(len(many)), Configs: names(many[:v1alpha1.MaxListedConfigs]),
				Conditions: ready("True", v1alpha1.ReasonWritten, fmt.Sprintf("%d configs write through it; none fails", len(many)))}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Summary(gwb, tc.configs, now), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}

	// Gathered again with nothing new, the status is the same, its Ready transition time included:
	// nothing is written.
	cfgs := []v1alpha1.RollingUpgradeConfig{config("web", "fleet", nil, failing("boom", -time.Minute))}
	first := Summary(gwb, cfgs, now)
	again := gwb.DeepCopy()
	again.Status = first
	if diff := cmp.Diff(first, Summary(again, cfgs, now.Add(time.Hour))); diff != "" {
		t.Errorf("gathered again (-first +again):\n%s", diff)
	}
	if long := Summary(gwb, []v1alpha1.RollingUpgradeConfig{config("web", "fleet", nil, failing(strings.Repeat("x", 10000), 0))}, now); len(long.LastError) > 4096 {
		t.Errorf("lastError of %d bytes, over the API's 4096", len(long.LastError))
	}
}

func names(configs []v1alpha1.RollingUpgradeConfig) []string {
	var out []string
	for _, c := range configs {
		out = append(out, c.Name)
	}
	return out
}

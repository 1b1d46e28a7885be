//go:build e2e

package e2e

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/rollgate/rollgate/api/v1alpha1"
)

const shardKey = "sharding.rollgate.dev/key"

// TestScenarioShards: two managers each serve one shard and a third serves the configs of no shard,
// as config/sharded installs them, each with its own Lease. Every config is rolled out by exactly
// one manager; a config moved to another shard during its health check is judged by the other, and
// its verdict is recorded once.
func TestScenarioShards(t *testing.T) {
	inNamespaceOnly(t)
	installCRDs(t)
	ns := newNamespace(t, "shards")
	lease := "rollgate-e2e-" + rand.String(5)
	selectors := map[string]string{"shard1": shardKey + "=shard1", "shard2": shardKey + "=shard2", "": "!" + shardKey}
	managers := map[string]*manager{}
	for shard, selector := range selectors {
		managers[shard] = startManager(t, "--namespace", ns, "--watch-label-selector="+selector,
			"--leader-election-namespace", ns, "--leader-election-id", lease+"-"+cmp.Or(shard, "rest"))
	}
	neverReady(t, ns, img("1.2.0"))

	// Two configs in each shard and two in none, all fed by one ApplicationVersion (of no shard).
	av := appVersion("1.0.0")
	av.Namespace = ns
	create(t, av)
	configsOf := map[string][]string{}
	for shard := range selectors {
		for i := range 2 {
			name := fmt.Sprintf("app-%s%d", strings.TrimPrefix(shard, "shard"), i)
			if shard == "" {
				name = fmt.Sprintf("app-none%d", i)
			}
			c := config(func(c *v1alpha1.RollingUpgradeConfig) {
				c.Name, c.Namespace, c.Spec.TargetRef.Name = name, ns, name
				if shard != "" {
					c.Labels = map[string]string{shardKey: shard}
				}
			})
			create(t, deployment(ns, name, img("1.0.0"), 1), c)
			configsOf[shard] = append(configsOf[shard], name)
		}
	}
	for _, names := range configsOf {
		for _, name := range names {
			waitNamed(t, ns, name, time.Minute, "1.0.0 recorded", func(c *v1alpha1.RollingUpgradeConfig) bool {
				return c.Status.CurrentVersion == "1.0.0"
			})
		}
	}
	announceNamed(t, ns, "app", "1.1.0")
	for _, names := range configsOf {
		for _, name := range names {
			waitNamed(t, ns, name, 2*time.Minute, "1.1.0 completed", func(c *v1alpha1.RollingUpgradeConfig) bool {
				return inPhase(c, v1alpha1.PhaseCompleted) && c.Status.CurrentVersion == "1.1.0"
			})
		}
	}
	for shard, m := range managers {
		// A verdict's metrics are recorded after its status is written: the count may follow the
		// status by a moment.
		eventually(t, 30*time.Second, "the manager of shard "+strconv.Quote(shard)+" counted its own rollouts", func(context.Context) (bool, string, error) {
			got, want := strings.Join(configsCounted(t, m, ns, "rolling_upgrade_success_total"), ","), strings.Join(configsOf[shard], ",")
			return got == want, "rolled out " + got + ", want " + want, nil
		})
	}

	// app-10 of shard1 moves to shard2 while 1.2.0, which never becomes Ready, is checked.
	moved := configsOf["shard1"][0]
	announceNamed(t, ns, "app", "1.2.0")
	waitNamed(t, ns, moved, time.Minute, "1.2.0 in its health check", func(c *v1alpha1.RollingUpgradeConfig) bool {
		return inPhase(c, v1alpha1.PhaseInProgress) && c.Status.TargetVersion == "1.2.0"
	})
	mustKubectl(t, "-n", ns, "label", "--overwrite", "ruc/"+moved, shardKey+"=shard2")
	c := waitNamed(t, ns, moved, 2*time.Minute, "1.2.0 rolled back", func(c *v1alpha1.RollingUpgradeConfig) bool {
		return c.Status.RollbackCount == 1 && (inPhase(c, v1alpha1.PhaseIdle) || inPhase(c, v1alpha1.PhaseCompleted))
	})
	rolledBack := 0
	for _, h := range c.Status.VersionHistory {
		if h.Version == "1.2.0" && h.Status == v1alpha1.ResultRolledBack {
			rolledBack++
		}
	}
	if rolledBack != 1 || c.Status.CurrentVersion != "1.1.0" {
		t.Errorf("history %+v, current %s: want 1.2.0 rolled back once, back on 1.1.0", c.Status.VersionHistory, c.Status.CurrentVersion)
	}
	eventually(t, 30*time.Second, "shard2 counted the verdict on "+moved, func(context.Context) (bool, string, error) {
		got := configsCounted(t, managers["shard2"], ns, "rolling_upgrade_failure_total")
		return slices.Contains(got, moved), fmt.Sprintf("shard2 judged %v", got), nil
	})
	if got := configsCounted(t, managers["shard1"], ns, "rolling_upgrade_failure_total"); slices.Contains(got, moved) {
		t.Errorf("shard1 still judged %s after it left the shard", moved)
	}
}

// configsCounted lists, sorted, the configs of namespace ns that a counter of the manager counts.
func configsCounted(t *testing.T, m *manager, ns, counter string) []string {
	t.Helper()
	var names []string
	for _, s := range m.scrape(t)[counter].GetMetric() {
		labels := map[string]string{}
		for _, l := range s.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["namespace"] == ns && s.GetCounter().GetValue() > 0 {
			names = append(names, labels["name"])
		}
	}
	slices.Sort(names)
	return names
}

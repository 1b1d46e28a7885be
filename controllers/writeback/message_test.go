package writeback

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rollgate/rollgate/api/v1alpha1"
)

func TestOutcomeOfSaysTheLastVerdict(t *testing.T) {
	history := func(version string, result v1alpha1.RolloutResult) func(*v1alpha1.RollingUpgradeConfig) {
		return func(c *v1alpha1.RollingUpgradeConfig) {
			c.Status.VersionHistory = append(c.Status.VersionHistory, v1alpha1.VersionHistoryEntry{Version: version, Status: result, AppliedAt: metav1.Now()})
		}
	}
	for _, tc := range []struct {
		name string
		ruc  *v1alpha1.RollingUpgradeConfig
		line string
	}{
		{"no verdict yet", config("web", "k.yaml", "1.2.0"), "shop/web: runs 1.2.0"},
		{"nothing recorded", config("web", "k.yaml", ""), "shop/web: record"},
		{"passed", with(config("web", "k.yaml", "1.3.0"), history("1.3.0", v1alpha1.ResultHealthy)), "shop/web: 1.3.0 passed its health check"},
		{"rolled back", with(config("web", "k.yaml", "1.2.0", "1.3.0"), history("1.3.0", v1alpha1.ResultRolledBack)),
			"shop/web: 1.3.0 failed its health check; back on 1.2.0"},
		{"rolled back, nothing recorded before", with(config("web", "k.yaml", "", "1.3.0"), history("1.3.0", v1alpha1.ResultRolledBack)),
			"shop/web: 1.3.0 failed its health check"},
		{"abandoned says what runs", with(config("web", "k.yaml", "1.2.0"), history("1.3.0", v1alpha1.ResultAbandoned)), "shop/web: runs 1.2.0"},
		{"a GitFirst rollout", with(config("web", "k.yaml", "1.2.0"), gitFirst, checking("1.3.0")), "shop/web: rolling out 1.3.0 (its health check follows)"},
		{"a ClusterFirst rollout says what runs", with(config("web", "k.yaml", "1.2.0"), recordRead, checking("1.3.0")), "shop/web: runs 1.2.0"},
		{"withdrawn", with(config("web", "k.yaml", "1.2.0"), gitFirst, history("1.3.0", v1alpha1.ResultWithdrawn)),
			"shop/web: 1.3.0 did not reach the workload in time and is withdrawn"},
	} {
		if got := OutcomeOf(tc.ruc).Line(); got != tc.line {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.line)
		}
	}
}

// gitFirst rolls the config out through Git; its record there was read.
func gitFirst(c *v1alpha1.RollingUpgradeConfig) {
	c.Spec.GitWriteBack.Mode = v1alpha1.ModeGitFirst
	recordRead(c)
}

// recordRead: the config's record in Git was read.
func recordRead(c *v1alpha1.RollingUpgradeConfig) {
	c.Status.GitWriteBack = &v1alpha1.GitWriteBackStatus{Written: "sha256:0"}
}

// checking: a health check of version runs.
func checking(version string) func(*v1alpha1.RollingUpgradeConfig) {
	return func(c *v1alpha1.RollingUpgradeConfig) {
		c.Annotations = map[string]string{v1alpha1.TargetImageAnnotation: c.Spec.Image + ":" + version,
			v1alpha1.UpdatePhaseAnnotation: "HealthCheck", v1alpha1.UpdateStartedAnnotation: "2026-12-01T03:00:00Z"}
		c.Status.TargetVersion = version
	}
}

// rollingBack: the rollback after a failed version is watched.
func rollingBack(c *v1alpha1.RollingUpgradeConfig) {
	c.Annotations = map[string]string{v1alpha1.UpdatePhaseAnnotation: "RollingBack", v1alpha1.UpdateStartedAnnotation: "2026-12-01T03:00:00Z"}
}

func with(c *v1alpha1.RollingUpgradeConfig, mods ...func(*v1alpha1.RollingUpgradeConfig)) *v1alpha1.RollingUpgradeConfig {
	for _, m := range mods {
		m(c)
	}
	return c
}

// The message names the configs whose files the commit changes, and no other.
func TestTheMessageNamesWhatTheCommitChanges(t *testing.T) {
	req := func(name, version string) Request {
		return Request{Outcome: Outcome{Namespace: "shop", Name: name, Image: "ghcr.io/acme/" + name, Version: version,
			Result: "Healthy", Tried: version}}
	}
	batch := []Request{req("api", "2.0.0"), req("db", "15.1.0"), req("web", "1.3.0")}
	custom, err := ParseMessageTemplate("deploy:{{ range .Outcomes }} {{ .Name }}={{ .Version }}{{ end }}")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		changed []bool
		tmpl    string
		want    string
	}{
		{"one of three changed", []bool{false, true, false}, "",
			"rollgate: shop/db: 15.1.0 passed its health check\n"},
		{"two of three changed", []bool{true, false, true, false}, "",
			"rollgate: outcomes of 2 configs\n\n- shop/api: 2.0.0 passed its health check\n- shop/web: 1.3.0 passed its health check\n"},
		{"the preset alone", []bool{false, false, false, true}, "",
			"rollgate: the Renovate preset of failed versions\n"},
		{"a template of the user's", []bool{true, true, false}, "custom", "deploy: api=2.0.0 db=15.1.0\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmpl := defaultMessage
			if tc.tmpl == "custom" {
				tmpl = custom
			}
			if got := message(tmpl, batch, tc.changed); got != tc.want {
				t.Errorf("got\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

func TestAMessageTemplateIsTriedBeforeUse(t *testing.T) {
	for _, tc := range []struct{ tmpl, err string }{
		{"{{ range .Outcomes }}", "unexpected EOF"},
		{"{{ range .Outcomes }}{{ .Nope }}{{ end }}", "can't evaluate field Nope"},
		{"{{ (index .Outcomes 0).Version }}", "index out of range"}, // a commit of the preset alone has none
		{"{{ range 1000000000 }}{{ end }}", "range over a list of the data alone"},
		{"{{ $n := 1000000000 }}{{ if true }}{{ range $n }}x{{ end }}{{ end }}", "range over a list of the data alone"},
		{`{{ define "x" }}{{ range 5 }}{{ end }}{{ end }}{{ template "x" }}`, "range over a list of the data alone"},
		{`{{ range .Outcomes }}{{ printf "%99999d" 1 }}{{ end }}`, "longer than"},
	} {
		if _, err := ParseMessageTemplate(tc.tmpl); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%q: error %v, want one saying %q", tc.tmpl, err, tc.err)
		}
	}
	for _, ok := range []string{"", "rollgate{{ range .Outcomes }} {{ .Namespace }}/{{ .Name }} {{ .Result }} {{ .Tried }} {{ .Reason }} {{ .FailedVersions }} {{ .Line }}{{ end }}"} {
		if _, err := ParseMessageTemplate(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
}

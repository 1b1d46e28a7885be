package writeback

import (
	"fmt"
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
		{`{{ define "x" }}{{ range 5 }}{{ end }}{{ end }}{{ template "x" }}`, "define and block are not allowed"},
		{`{{ range .Outcomes }}{{ printf "%2000000000d" 1 }}{{ end }}`, "printf: a message may call only"},
		{`{{ slice .Name 0 }}`, "slice: a message may call only"},
		{`{{ call .Line }}`, "call: a message may call only"},
		{`{{ define "a" }}{{ template "a" . }}{{ template "a" . }}{{ end }}{{ template "a" . }}`, "define and block are not allowed"},
		{`{{ block "a" . }}x{{ end }}`, "define and block are not allowed"},
		{`{{ template "message" . }}`, "may not call another template"},
		{`{{ range .Outcomes }}{{ with $ }}{{ range .Outcomes }}{{ end }}{{ end }}{{ end }}`, "inside another range"},
		{`{{ range .Outcomes }}{{ range .FailedVersions }}{{ range $.Outcomes }}{{ end }}{{ end }}{{ end }}`, "range over a list of the data alone"},
		{`{{ range .Outcomes }}{{ $o := . }}{{ with $o }}{{ range .FailedVersions }}{{ with $o }}{{ range .FailedVersions }}{{ end }}{{ end }}{{ end }}{{ end }}{{ end }}`,
			"a range over .FailedVersions inside another"},
	} {
		if _, err := ParseMessageTemplate(tc.tmpl); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%q: error %v, want one saying %q", tc.tmpl, err, tc.err)
		}
	}
	for _, ok := range []string{"", "rollgate{{ range .Outcomes }} {{ .Namespace }}/{{ .Name }} {{ .Result }} {{ .Tried }} {{ .Reason }} {{ .FailedVersions }} {{ .Line }}{{ end }}",
		`{{ if eq (len .Outcomes) 1 }}{{ with index .Outcomes 0 }}{{ .Name }}{{ range $i, $v := .FailedVersions }}{{ if gt $i 0 }},{{ end }} {{ $v }}{{ end }}{{ end }}{{ else }}{{ len .Outcomes }} configs{{ end }}`,
		DefaultMessageTemplate} {
		if _, err := ParseMessageTemplate(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
}

// A template's work is counted before it runs, with the lengths of the lists it ranges over: one that
// would take more than maxSteps on a commit's data is not run, and the commit takes rollgate's
// own message.
func TestAMessageTemplateIsBoundedByItsWork(t *testing.T) {
	outcomes := func(n, failed int) MessageData {
		var d MessageData
		for i := range n {
			o := Outcome{Namespace: "shop", Name: fmt.Sprintf("web-%d", i), Version: "1.0.0"}
			for j := range failed {
				o.FailedVersions = append(o.FailedVersions, fmt.Sprintf("2.0.%d", j))
			}
			d.Outcomes = append(d.Outcomes, o)
		}
		return d
	}
	// 40 conditions per failed version of each outcome, none of them writing a byte.
	busy := "{{ range .Outcomes }}{{ range .FailedVersions }}" + strings.Repeat(`{{ if eq . "x" }}{{ end }}`, 40) + "{{ end }}{{ end }}"
	tmpl, err := ParseMessageTemplate(busy)
	if err != nil {
		t.Fatal(err)
	}
	if n := steps(tmpl.Root, outcomes(10, 10)); n < 40*10*10 || n > maxSteps {
		t.Errorf("10 configs with 10 failed versions each: %d steps, want at least %d and within %d", n, 40*10*10, maxSteps)
	}
	if _, err := execute(tmpl, outcomes(10, 10)); err != nil {
		t.Errorf("10 configs with 10 failed versions each: %v", err)
	}
	if _, err := execute(tmpl, outcomes(1000, 100)); err == nil || !strings.Contains(err.Error(), "steps for 1000 configs") {
		t.Errorf("1000 configs with 100 failed versions each: error %v, want one counting its steps", err)
	}
	batch := make([]Request, 1000)
	changed := make([]bool, 1000)
	for i, o := range outcomes(1000, 100).Outcomes {
		batch[i], changed[i] = Request{Outcome: o}, true
	}
	if got := message(tmpl, batch, changed); !strings.HasPrefix(got, "rollgate: outcomes of 1000 configs") {
		t.Errorf("a template past its bound: message %.80q, want rollgate's own", got)
	}
}

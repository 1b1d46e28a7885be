package renovate

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
)

// Renovate runs these regular expressions with RE2 (or, without it, JavaScript's engine); Go's
// regexp is RE2 too, so the managers can be checked here on the files they are meant for. The e2e
// tests run the real Renovate with them.

type customManager struct {
	Description          string   `json:"description"`
	MatchStrings         []string `json:"matchStrings"`
	MatchStringsStrategy string   `json:"matchStringsStrategy"`
}

func managers(t *testing.T, path string) []customManager {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		CustomManagers []customManager `json:"customManagers"`
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return cfg.CustomManagers
}

type match struct{ dep, current string }

// extract applies a manager the way Renovate does: "any" (default) runs each pattern over the
// file; "recursive" narrows the file with each pattern and extracts with the last.
func extract(t *testing.T, m customManager, content string) []match {
	t.Helper()
	var res []*regexp.Regexp
	for _, s := range m.MatchStrings {
		re, err := regexp.Compile(s)
		if err != nil {
			t.Fatalf("%s: %v", m.Description, err)
		}
		res = append(res, re)
	}
	groups := func(re *regexp.Regexp, text string) []match {
		var out []match
		for _, sm := range re.FindAllStringSubmatch(text, -1) {
			var mt match
			for i, n := range re.SubexpNames() {
				switch n {
				case "depName":
					mt.dep = sm[i]
				case "currentValue":
					mt.current = sm[i]
				}
			}
			out = append(out, mt)
		}
		return out
	}
	if m.MatchStringsStrategy != "recursive" {
		var out []match
		for _, re := range res {
			out = append(out, groups(re, content)...)
		}
		return out
	}
	texts := []string{content}
	for _, re := range res[:len(res)-1] {
		var next []string
		for _, tx := range texts {
			next = append(next, re.FindAllString(tx, -1)...)
		}
		texts = next
	}
	var out []match
	for _, tx := range texts {
		out = append(out, groups(res[len(res)-1], tx)...)
	}
	return out
}

func TestPresetFindsApplicationVersionsAndLabelledConfigMaps(t *testing.T) {
	ms := managers(t, "../../renovate/rollgate.json")
	if len(ms) != 2 {
		t.Fatalf("%d custom managers", len(ms))
	}
	appVersions := `# a multi-document file
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  template:
    spec:
      containers:
      - name: web
        image: ghcr.io/acme/web:1.0.0
---
apiVersion: rollgate.dev/v1alpha1
kind: ApplicationVersion
metadata:
  name: web
spec:
  image: ghcr.io/acme/web   # the repository
  version: "1.3.0"
---
apiVersion: rollgate.dev/v1alpha1
kind: ApplicationVersion
metadata: {name: api}
spec:
  image: 127.0.0.1:5000/acme/api
  version: v2.1.0
`
	got := extract(t, ms[0], appVersions)
	want := []match{{"ghcr.io/acme/web", "1.3.0"}, {"127.0.0.1:5000/acme/api", "v2.1.0"}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("ApplicationVersion manager found %v, want %v", got, want)
	}

	configMaps := `apiVersion: v1
kind: ConfigMap
metadata:
  name: app-versions
  labels:
    rollgate.dev/version-source: "true"
data:
  # renovate: image=ghcr.io/acme/web
  web: "1.3.0"
  # renovate: image=ghcr.io/acme/api
  api: 2.1.0
  unrelated: hello
`
	got = extract(t, ms[1], configMaps)
	want = []match{{"ghcr.io/acme/web", "1.3.0"}, {"ghcr.io/acme/api", "2.1.0"}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("ConfigMap manager found %v, want %v", got, want)
	}
	unlabelled := strings.Replace(configMaps, `rollgate.dev/version-source: "true"`, `app: web`, 1)
	if got := extract(t, ms[1], unlabelled); len(got) != 0 {
		t.Errorf("an unlabelled ConfigMap was matched: %v", got)
	}
}

// TestProjectConfigFindsEveryPinnedVersion: every version the Makefile pins is kept current by the
// repository's own renovate.json.
func TestProjectConfigFindsEveryPinnedVersion(t *testing.T) {
	ms := managers(t, "../../renovate.json")
	makefile, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	pins := regexp.MustCompile(`(?m)^([A-Z_]+_VERSION) \?= (\S+)$`).FindAllStringSubmatch(string(makefile), -1)
	found := map[string]bool{}
	for _, m := range extract(t, ms[0], string(makefile)) {
		found[m.current] = true
	}
	if len(pins) < 6 {
		t.Fatalf("only %d pinned versions in the Makefile", len(pins))
	}
	for _, p := range pins {
		if !found[p[2]] {
			t.Errorf("%s ?= %s is not found by renovate.json", p[1], p[2])
		}
	}
}

// Package grafana holds rollgate's Grafana dashboard; its test checks the JSON against Grafana's
// own dashboard schema. The e2e suite evaluates every query against a real Prometheus.
package grafana

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/plugins"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// decode reads a dashboard strictly with the Grafana schema types: a field Grafana does not know,
// a missing required one or a wrong type is an error, as are the panels' plugin options. The file is
// in the classic dashboard JSON model, which these types describe (the v2 types are another model).
func decode(raw []byte) (*dashboard.Dashboard, error) { //nolint:staticcheck // the classic model, on purpose
	plugins.RegisterDefaultPlugins()
	var d dashboard.Dashboard //nolint:staticcheck // the classic model, on purpose
	if err := noErrors(d.UnmarshalJSONStrict(raw)); err != nil {
		return nil, err
	}
	if err := noErrors(d.Validate()); err != nil {
		return nil, err
	}
	return &d, nil
}

// noErrors: the SDK returns an empty error list as a non-nil error.
func noErrors(err error) error {
	if errs, ok := err.(cog.BuildErrors); ok && len(errs) == 0 {
		return nil
	}
	return err
}

func TestDashboardFollowsGrafanasSchema(t *testing.T) {
	raw, err := os.ReadFile("rollgate-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	d, err := decode(raw)
	if err != nil {
		t.Fatalf("rollgate-dashboard.json is not a valid Grafana dashboard: %v", err)
	}

	vars := map[string]dashboard.VariableModel{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v
	}
	if v, ok := vars["datasource"]; !ok || v.Type != dashboard.VariableTypeDatasource {
		t.Error("no datasource variable: the dashboard must not name a data source of one installation")
	}
	for _, name := range []string{"namespace", "config"} {
		if v, ok := vars[name]; !ok || v.Type != dashboard.VariableTypeQuery || v.Multi == nil || !*v.Multi {
			t.Errorf("no multi-value query variable %s", name)
		}
	}
	// The SDK validates the panels but (v0.0.22) does not keep them decoded, so read those plainly.
	var plain struct {
		Panels []struct {
			Title      string `json:"title"`
			Datasource struct {
				UID string `json:"uid"`
			} `json:"datasource"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &plain); err != nil {
		t.Fatal(err)
	}
	if len(plain.Panels) != len(d.Panels) || len(plain.Panels) == 0 {
		t.Fatalf("%d panels", len(plain.Panels))
	}
	for _, p := range plain.Panels {
		if p.Datasource.UID != "${datasource}" {
			t.Errorf("panel %q does not use the datasource variable", p.Title)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, q := range p.Targets {
			if q.Expr == "" {
				t.Errorf("panel %q has an empty query", p.Title)
			}
		}
	}

	// The check is a real one: a misspelt field is refused.
	bad := strings.Replace(string(raw), `"gridPos"`, `"gridPosition"`, 1)
	if _, err := decode([]byte(bad)); err == nil {
		t.Error("a dashboard with a misspelt panel field was accepted")
	}
}

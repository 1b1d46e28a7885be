//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/promql/parser"
)

// dashboard is the part of config/grafana/rollgate-dashboard.json the tests evaluate (its shape is
// checked against Grafana's schema by the unit test in config/grafana).
type dashboard struct {
	Templating struct {
		List []struct {
			Name  string          `json:"name"`
			Type  string          `json:"type"`
			Query json.RawMessage `json:"query"`
		} `json:"list"`
	} `json:"templating"`
	Panels []struct {
		Title   string        `json:"title"`
		Type    string        `json:"type"`
		Targets []panelTarget `json:"targets"`
	} `json:"panels"`
}

type panelTarget struct {
	RefID   string `json:"refId"`
	Expr    string `json:"expr"`
	Instant bool   `json:"instant"`
	Format  string `json:"format"`
	Legend  string `json:"legendFormat"`
}

func loadDashboard(t *testing.T) *dashboard {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot, "config", "grafana", "rollgate-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("the dashboard is not valid JSON: %v", err)
	}
	return &d
}

// textbox is the default value of a textbox variable, "" if there is none.
func (d *dashboard) textbox(name string) string {
	for _, v := range d.Templating.List {
		var q string
		if v.Name == name && v.Type == "textbox" && json.Unmarshal(v.Query, &q) == nil {
			return q
		}
	}
	return ""
}

// variableQuery is a query variable's Grafana query, label_values(SELECTOR, LABEL).
type variableQuery struct{ selector, label string }

var labelValuesCall = regexp.MustCompile(`^label_values\((.+),\s*(\w+)\)$`)

func (d *dashboard) variables(t *testing.T) map[string]variableQuery {
	t.Helper()
	out := map[string]variableQuery{}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct {
			Query string `json:"query"`
		}
		if err := json.Unmarshal(v.Query, &q); err != nil {
			t.Fatalf("variable %s: %v", v.Name, err)
		}
		m := labelValuesCall.FindStringSubmatch(q.Query)
		if m == nil {
			t.Fatalf("variable %s: query %q is not label_values(SELECTOR, LABEL)", v.Name, q.Query)
		}
		out[v.Name] = variableQuery{selector: m[1], label: m[2]}
	}
	return out
}

// expand replaces Grafana's variables in a query, longest name first so $__rate_interval is not
// read as $__rate.
func expand(q string, vars map[string]string) string {
	names := make([]string, 0, len(vars))
	for n := range vars {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return len(names[i]) > len(names[j]) })
	for _, n := range names {
		q = strings.ReplaceAll(q, "$"+n, vars[n])
	}
	return q
}

// metricNames are the metrics a PromQL expression selects.
func metricNames(expr string) ([]string, error) {
	node, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	if err != nil {
		return nil, err
	}
	var names []string
	var bad error
	parser.Inspect(node, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			if vs.Name == "" {
				bad = fmt.Errorf("a selector without a metric name: %s", vs)
			}
			names = append(names, vs.Name)
		}
		return nil
	})
	return names, bad
}

// unknownMetrics lists the metrics an expression selects that are not among known.
func unknownMetrics(expr string, known map[string]bool) ([]string, error) {
	names, err := metricNames(expr)
	if err != nil {
		return nil, err
	}
	var unknown []string
	for _, n := range names {
		if !known[n] {
			unknown = append(unknown, n)
		}
	}
	return unknown, nil
}

// Command prometheusrule wraps a Prometheus rule file into a prometheus-operator PrometheusRule, so
// that config/prometheus/rollgate.rules.yaml stays the one place the alerts are written.
//
//	go run ./hack/prometheusrule IN.rules.yaml OUT.yaml
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/yaml"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: prometheusrule IN.rules.yaml OUT.yaml")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func run(in, out string) error {
	raw, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	var rules struct {
		Groups []map[string]any `json:"groups"`
	}
	if err := yaml.UnmarshalStrict(raw, &rules); err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	if len(rules.Groups) == 0 {
		return fmt.Errorf("%s has no rule groups", in)
	}
	obj := map[string]any{
		"apiVersion": "monitoring.coreos.com/v1",
		"kind":       "PrometheusRule",
		"metadata": map[string]any{
			"name":      "alerts",
			"namespace": "system",
			"labels":    map[string]any{"app.kubernetes.io/name": "rollgate"},
		},
		"spec": map[string]any{"groups": rules.Groups},
	}
	body, err := yaml.Marshal(obj)
	if err != nil {
		return err
	}
	header := fmt.Sprintf("# Generated from %s by `make manifests`; edit that file, not this one.\n", filepath.Base(in))
	return os.WriteFile(out, append([]byte(header), body...), 0o644)
}

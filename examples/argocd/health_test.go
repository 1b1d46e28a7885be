// Package argocd holds the Argo CD example; its test runs the health checks in gopher-lua, the Lua
// interpreter Argo CD uses, the way Argo CD calls them: the object as the global "obj", a table
// with status and message as the result.
package argocd

import (
	"os"
	"strconv"
	"strings"
	"testing"

	lua "github.com/yuin/gopher-lua"
	"sigs.k8s.io/yaml"
)

func healthScripts(t *testing.T) map[string]string {
	t.Helper()
	data, err := os.ReadFile("argocd-cm-health.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cm struct {
		Data map[string]string `json:"data"`
	}
	if err := yaml.Unmarshal(data, &cm); err != nil {
		t.Fatal(err)
	}
	return cm.Data
}

// toLua turns decoded JSON into Lua values, as Argo CD does with the live object.
func toLua(L *lua.LState, v any) lua.LValue {
	switch x := v.(type) {
	case map[string]any:
		t := L.NewTable()
		for k, e := range x {
			t.RawSetString(k, toLua(L, e))
		}
		return t
	case []any:
		t := L.NewTable()
		for _, e := range x {
			t.Append(toLua(L, e))
		}
		return t
	case string:
		return lua.LString(x)
	case bool:
		return lua.LBool(x)
	case float64:
		return lua.LNumber(x)
	case int64:
		return lua.LNumber(x)
	}
	return lua.LNil
}

func runHealth(t *testing.T, script, object string) (status, message string) {
	t.Helper()
	var obj map[string]any
	if err := yaml.Unmarshal([]byte(object), &obj); err != nil {
		t.Fatal(err)
	}
	L := lua.NewState(lua.Options{SkipOpenLibs: false})
	defer L.Close()
	L.SetGlobal("obj", toLua(L, obj))
	fn, err := L.LoadString(script)
	if err != nil {
		t.Fatalf("the script does not compile: %v", err)
	}
	L.Push(fn)
	if err := L.PCall(0, 1, nil); err != nil {
		t.Fatalf("the script failed: %v", err)
	}
	res, ok := L.Get(-1).(*lua.LTable)
	if !ok {
		t.Fatalf("the script returned %v, not a table", L.Get(-1))
	}
	return res.RawGetString("status").String(), res.RawGetString("message").String()
}

func config(generation, observed int, phase string, conditions ...string) string {
	return "metadata: {generation: " + itoa(generation) + "}\nstatus:\n  observedGeneration: " + itoa(observed) +
		"\n  phase: " + phase + "\n  conditions:\n" + strings.Join(conditions, "\n")
}

func cond(typ, status, msg string) string {
	return "  - {type: " + typ + ", status: \"" + status + "\", message: \"" + msg + "\"}"
}

func itoa(i int) string { return strconv.Itoa(i) }

func TestRollingUpgradeConfigHealth(t *testing.T) {
	script := healthScripts(t)["resource.customizations.health.rollgate.dev_RollingUpgradeConfig"]
	cases := []struct {
		name, object, status, message string
	}{
		{"not yet observed", "metadata: {generation: 1}\nspec: {}", "Progressing", "Waiting for rollgate to observe the config"},
		{"new generation not observed", config(2, 1, "Completed", cond("Ready", "True", "running 1.3.0")), "Progressing", "Waiting for rollgate to observe the config"},
		{"up to date", config(1, 1, "Completed", cond("Ready", "True", "running 1.3.0")), "Healthy", "running 1.3.0"},
		{"held for the window", config(1, 1, "Pending", cond("Ready", "True", "1.4.0 held until 03:00")), "Healthy", "1.4.0 held until 03:00"},
		{"rolling out", config(1, 1, "InProgress", cond("Ready", "False", "rolling out 1.4.0"), cond("Reconciling", "True", "rolling out 1.4.0")), "Progressing", "rolling out 1.4.0"},
		{"rolling back", config(1, 1, "RollingBack", cond("Ready", "False", "returning"), cond("Reconciling", "True", "returning to 1.3.0")), "Progressing", "returning to 1.3.0"},
		{"circuit open", config(1, 1, "Failed", cond("Ready", "False", "circuit open"), cond("Stalled", "True", "circuit breaker open after 3 consecutive rollbacks")), "Degraded", "circuit breaker open after 3 consecutive rollbacks"},
		{"invalid spec", config(1, 1, "Idle", cond("Ready", "False", "x"), cond("Stalled", "True", "spec.versionConstraint: invalid")), "Degraded", "spec.versionConstraint: invalid"},
		{"suspended", config(1, 1, "Suspended", cond("Ready", "True", "spec.suspend is set")), "Suspended", "spec.suspend is set"},
		{"waiting for the workload", config(1, 1, "Idle", cond("Ready", "False", "Deployment web is not healthy")), "Progressing", "Deployment web is not healthy"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, message := runHealth(t, script, tc.object)
			if status != tc.status || message != tc.message {
				t.Errorf("health = %s %q, want %s %q", status, message, tc.status, tc.message)
			}
		})
	}
}

func TestApplicationVersionHealth(t *testing.T) {
	script := healthScripts(t)["resource.customizations.health.rollgate.dev_ApplicationVersion"]
	cases := []struct{ object, status string }{
		{"spec: {version: 1.4.0}", "Progressing"},
		{"status:\n  conditions:\n" + cond("Ready", "True", "ok"), "Healthy"},
		{"status:\n  conditions:\n" + cond("Ready", "False", "version latest is not semver"), "Degraded"},
	}
	for _, tc := range cases {
		if status, _ := runHealth(t, script, tc.object); status != tc.status {
			t.Errorf("%s: health %s, want %s", tc.object, status, tc.status)
		}
	}
}

package notify

import (
	"bytes"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	notifyv1beta3 "github.com/fluxcd/notification-controller/api/v1beta3"
	"sigs.k8s.io/yaml"
)

// The objects docs/notifications.md gives decode strictly into notification-controller's own types,
// the CRD patch adds RollingUpgradeConfig to the kinds an Alert's event sources may name, and the
// example body is a Payload, field for field.
func TestTheNotificationsPageIsWhatFluxAndTheWebhookRead(t *testing.T) {
	page, err := os.ReadFile("../../docs/notifications.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```(yaml|json)\n(.*?)```").FindAllSubmatch(page, -1)
	kinds := map[string]int{}
	for _, b := range blocks {
		if string(b[1]) == "json" {
			var p Payload
			dec := json.NewDecoder(bytes.NewReader(b[2]))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&p); err != nil || p.ID == "" || p.Version == "" || p.Object.Kind != "RollingUpgradeConfig" {
				t.Errorf("the example body is no Payload: %v (%+v)", err, p)
			}
			kinds["Payload"]++
			continue
		}
		for _, doc := range strings.Split(string(b[2]), "\n---\n") {
			var head struct{ Kind string }
			if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
				t.Fatalf("%v:\n%s", err, doc)
			}
			kinds[head.Kind]++
			switch head.Kind {
			case "Provider":
				var p notifyv1beta3.Provider
				if err := yaml.UnmarshalStrict([]byte(doc), &p); err != nil || p.Spec.Type == "" {
					t.Errorf("Provider: %v", err)
				}
			case "Alert":
				var a notifyv1beta3.Alert
				if err := yaml.UnmarshalStrict([]byte(doc), &a); err != nil {
					t.Errorf("Alert: %v", err)
				}
				if len(a.Spec.EventSources) == 0 || a.Spec.EventSources[0].Kind != "RollingUpgradeConfig" || a.Spec.ProviderRef.Name == "" {
					t.Errorf("the Alert names no RollingUpgradeConfig: %+v", a.Spec)
				}
			case "Kustomization":
				checkAlertCRDPatch(t, doc)
			default:
				t.Errorf("an object of kind %q the test does not know", head.Kind)
			}
		}
	}
	for _, k := range []string{"Provider", "Alert", "Kustomization", "Payload"} {
		if kinds[k] != 1 {
			t.Errorf("%d %s on the page, want 1", kinds[k], k)
		}
	}
}

func checkAlertCRDPatch(t *testing.T, doc string) {
	var k struct {
		Patches []struct {
			Target struct{ Kind, Name string }
			Patch  string
		}
	}
	if err := yaml.Unmarshal([]byte(doc), &k); err != nil || len(k.Patches) != 1 {
		t.Fatalf("the Kustomization: %v", err)
	}
	p := k.Patches[0]
	var ops []struct{ Op, Path, Value string }
	if err := yaml.UnmarshalStrict([]byte(p.Patch), &ops); err != nil || len(ops) != 1 {
		t.Fatalf("the patch: %v", err)
	}
	op := ops[0]
	if p.Target.Kind != "CustomResourceDefinition" || p.Target.Name != "alerts.notification.toolkit.fluxcd.io" || op.Op != "add" ||
		!regexp.MustCompile(`^/spec/versions/\d+/schema/openAPIV3Schema/properties/spec/properties/eventSources/items/properties/kind/enum/-$`).MatchString(op.Path) ||
		op.Value != "RollingUpgradeConfig" {
		t.Errorf("the patch does not add RollingUpgradeConfig to the Alert's event source kinds: %+v %+v", p.Target, op)
	}
}

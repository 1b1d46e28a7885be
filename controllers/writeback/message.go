package writeback

import (
	"fmt"
	"strings"
	"text/template"

	"github.com/rollgate/rollgate/api/v1alpha1"
)

// Outcome is what a commit says of one config; a message template gets one per config whose files
// the commit changes.
type Outcome struct {
	Namespace, Name string
	// Image is the config's image repository.
	Image string
	// Version runs now: the version that last passed its health check ("" while none has).
	Version string
	// Result of the last verdict, Healthy or RolledBack; "" when there was none yet (the config's
	// record alone is written).
	Result string
	// Tried is the version of the last verdict, Reason what its history entry adds (e.g. that a
	// person set it by hand).
	Tried, Reason string
	// FailedVersions are the versions that failed their health check.
	FailedVersions []string
}

// OutcomeOf is what ruc's status says now.
func OutcomeOf(ruc *v1alpha1.RollingUpgradeConfig) Outcome {
	st := ruc.Status
	o := Outcome{Namespace: ruc.Namespace, Name: ruc.Name, Image: ruc.Spec.Image, Version: st.CurrentVersion,
		FailedVersions: st.FailedVersions}
	if n := len(st.VersionHistory); n > 0 {
		last := st.VersionHistory[n-1]
		if last.Status == v1alpha1.ResultHealthy || last.Status == v1alpha1.ResultRolledBack {
			o.Result, o.Tried, o.Reason = string(last.Status), last.Version, last.Reason
		}
	}
	return o
}

// Line says the outcome in a line: rollgate's own message has one per config.
func (o Outcome) Line() string {
	name := o.Namespace + "/" + o.Name
	switch {
	case o.Result == string(v1alpha1.ResultHealthy):
		return fmt.Sprintf("%s: %s passed its health check", name, o.Tried)
	case o.Result == string(v1alpha1.ResultRolledBack) && o.Version != "":
		return fmt.Sprintf("%s: %s failed its health check; back on %s", name, o.Tried, o.Version)
	case o.Result == string(v1alpha1.ResultRolledBack):
		return fmt.Sprintf("%s: %s failed its health check", name, o.Tried)
	case o.Version != "":
		return fmt.Sprintf("%s: runs %s", name, o.Version)
	}
	return name + ": record"
}

// MessageData is what a message template is executed with.
type MessageData struct {
	// Outcomes of the configs whose files the commit changes, by namespace and name; empty when it
	// changes the Renovate preset alone (a record edited by hand, a preset deleted).
	Outcomes []Outcome
}

// DefaultMessageTemplate is the commit message without spec.messageTemplate.
const DefaultMessageTemplate = `{{- if not .Outcomes -}}
rollgate: the Renovate preset of failed versions
{{- else if eq (len .Outcomes) 1 -}}
rollgate: {{ (index .Outcomes 0).Line }}
{{- else -}}
rollgate: outcomes of {{ len .Outcomes }} configs
{{ range .Outcomes }}
- {{ .Line }}
{{- end }}
{{- end }}
`

var defaultMessage = template.Must(template.New("message").Parse(DefaultMessageTemplate))

// ParseMessageTemplate parses a GitWriteBack's message template ("" is the default) and tries it on
// examples, so a template that names a field that does not exist is refused here, not at a commit.
func ParseMessageTemplate(text string) (*template.Template, error) {
	if text == "" {
		return defaultMessage, nil
	}
	t, err := template.New("message").Option("missingkey=error").Parse(text)
	if err != nil {
		return nil, err
	}
	example := Outcome{Namespace: "shop", Name: "web", Image: "ghcr.io/acme/web", Version: "1.2.0",
		Result: string(v1alpha1.ResultRolledBack), Tried: "1.3.0", FailedVersions: []string{"1.3.0"}}
	for _, data := range []MessageData{{}, {Outcomes: []Outcome{example}}, {Outcomes: []Outcome{example, example}}} {
		var b strings.Builder
		if err := t.Execute(&b, data); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// message is the commit message of a batch for the requests whose change changed a file (changed
// is indexed as batch; the changes after it are the presets').
func message(t *template.Template, batch []Request, changed []bool) string {
	var data MessageData
	for i, r := range batch {
		if i < len(changed) && changed[i] {
			data.Outcomes = append(data.Outcomes, r.Outcome)
		}
	}
	var b strings.Builder
	if t == nil || t.Execute(&b, data) != nil || strings.TrimSpace(b.String()) == "" {
		b.Reset()
		_ = defaultMessage.Execute(&b, data) // tried on every shape of data by its tests
	}
	msg := b.String()
	if !strings.HasSuffix(msg, "\n") {
		msg += "\n"
	}
	return msg
}

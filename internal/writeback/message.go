package writeback

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/template"
	"text/template/parse"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/image"
	"github.com/rollgate/rollgate/internal/rollout"
)

// Outcome is what a commit says of one config; a message template gets one per config whose files
// the commit changes.
type Outcome struct {
	Namespace, Name string
	// Image is the config's image repository.
	Image string
	// Version runs now: the version that last passed its health check ("" while none has).
	Version string
	// Rolling is the version a GitFirst config rolls out by this commit; "" for none.
	Rolling string
	// Result of the last verdict, Healthy or RolledBack, or Withdrawn (a GitFirst version that did
	// not reach the workload); "" when there was none yet (the config's record alone is written).
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
		switch last := st.VersionHistory[n-1]; last.Status {
		case v1alpha1.ResultHealthy, v1alpha1.ResultRolledBack, v1alpha1.ResultWithdrawn:
			o.Result, o.Tried, o.Reason = string(last.Status), last.Version, last.Reason
		}
	}
	if ruc.Spec.GitWriteBack.GitFirst() {
		if img := rollout.GitImage(ruc); img != "" && img != st.CurrentImage {
			o.Rolling = image.Tag(img)
		}
	}
	return o
}

// Line says the outcome in a line: rollgate's own message has one per config.
func (o Outcome) Line() string {
	name := o.Namespace + "/" + o.Name
	switch {
	case o.Rolling != "":
		return fmt.Sprintf("%s: rolling out %s (its health check follows)", name, o.Rolling)
	case o.Result == string(v1alpha1.ResultWithdrawn):
		return fmt.Sprintf("%s: %s did not reach the workload in time and is withdrawn", name, o.Tried)
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

// maxMessage bounds a commit message: a template's output past it fails the template.
const maxMessage = 16 << 10

// maxSteps bounds the work of one execution of a message template: the actions, texts and
// conditions it evaluates, counted with the lengths of the lists it ranges over (see steps). A
// tenant writes the template and the manager runs it, for every commit of a repository many
// tenants may share; past this bound the commit takes rollgate's own message.
const maxSteps = 100_000

// callSteps is what a command of a pipeline counts (a call through reflection, of a function such
// as eq or of a method such as .Line, costs ten to twenty times a text).
const callSteps = 16

// funcs are the functions a message template may call: none builds a value larger than its
// arguments (printf's width, print's and slice's copies do), and none calls anything else.
var funcs = map[string]bool{"and": true, "or": true, "not": true, "len": true, "index": true,
	"eq": true, "ne": true, "lt": true, "le": true, "gt": true, "ge": true}

// ParseMessageTemplate parses a GitWriteBack's message template ("" is the default) and tries it on
// examples, so a template that names a field that does not exist is refused here, not at a commit.
// A tenant writes it and the manager runs it, so what it may do is bounded before it runs once: it
// calls only funcs, defines and calls no other template (which could call each other for ever),
// ranges over the data's lists alone (not over a number, which would loop as long as it says) and
// over .Outcomes only once (not once per outcome) and over .FailedVersions not inside another
// range over them; its work is counted against maxSteps before each run, and its output bounded by
// maxMessage.
func ParseMessageTemplate(text string) (*template.Template, error) {
	if text == "" {
		return defaultMessage, nil
	}
	t, err := template.New("message").Option("missingkey=error").Parse(text)
	if err != nil {
		return nil, err
	}
	if len(t.Templates()) > 1 {
		return nil, errors.New("define and block are not allowed: a message is one template")
	}
	if err := allowed(t.Root, ""); err != nil {
		return nil, err
	}
	example := Outcome{Namespace: "shop", Name: "web", Image: "ghcr.io/acme/web", Version: "1.2.0",
		Result: string(v1alpha1.ResultRolledBack), Tried: "1.3.0", FailedVersions: []string{"1.3.0"}}
	for _, data := range []MessageData{{}, {Outcomes: []Outcome{example}}, {Outcomes: []Outcome{example, example}}} {
		if _, err := execute(t, data); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// allowed refuses what a message template may not do (see ParseMessageTemplate); inRange is the
// list of the innermost range n is in ("" for none). Ranges nest two deep at most (the outcomes,
// then their failed versions), so the work a template may do is a product of two lengths.
func allowed(n parse.Node, inRange string) error {
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return nil
		}
		var errs []error
		for _, c := range n.Nodes {
			errs = append(errs, allowed(c, inRange))
		}
		return errors.Join(errs...)
	case *parse.ActionNode:
		return allowed(n.Pipe, inRange)
	case *parse.PipeNode:
		if n == nil {
			return nil
		}
		var errs []error
		for _, c := range n.Cmds {
			for _, a := range c.Args {
				errs = append(errs, allowed(a, inRange))
			}
		}
		return errors.Join(errs...)
	case *parse.ChainNode:
		return allowed(n.Node, inRange)
	case *parse.IdentifierNode:
		if !funcs[n.Ident] {
			return fmt.Errorf("%s: a message may call only %s", n.Ident, strings.Join(slices.Sorted(maps.Keys(funcs)), ", "))
		}
	case *parse.TemplateNode:
		return fmt.Errorf("%s: a message may not call another template", n)
	case *parse.IfNode:
		return errors.Join(allowed(n.Pipe, inRange), allowed(n.List, inRange), allowed(n.ElseList, inRange))
	case *parse.WithNode:
		return errors.Join(allowed(n.Pipe, inRange), allowed(n.List, inRange), allowed(n.ElseList, inRange))
	case *parse.RangeNode:
		list := rangedList(n)
		switch {
		case list == "":
			return fmt.Errorf("range %s: range over a list of the data alone, such as .Outcomes", n.Pipe)
		case list == "FailedVersions" && inRange == "FailedVersions":
			return fmt.Errorf("range %s: a range over .FailedVersions inside another would run once per failed version", n.Pipe)
		case list == "Outcomes" && inRange != "":
			return fmt.Errorf("range %s: a range over .Outcomes inside another range would run once per outcome", n.Pipe)
		}
		return errors.Join(allowed(n.List, list), allowed(n.ElseList, inRange))
	}
	return nil
}

// rangedList is the field of the data a range goes over (Outcomes, FailedVersions), or "" when it
// goes over anything else.
func rangedList(n *parse.RangeNode) string {
	if cmds := n.Pipe.Cmds; len(cmds) == 1 && len(cmds[0].Args) == 1 {
		if f, ok := cmds[0].Args[0].(*parse.FieldNode); ok && len(f.Ident) == 1 {
			if name := f.Ident[0]; name == "Outcomes" || name == "FailedVersions" {
				return name
			}
		}
	}
	return ""
}

// steps is the most work an execution of n may do on data: each text, action, argument and
// condition counts one, each command callSteps, times the length of every list it is ranged over (the longest
// FailedVersions for a range over it).
func steps(n parse.Node, data MessageData) int {
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return 0
		}
		s := 0
		for _, c := range n.Nodes {
			s = saturated(s + steps(c, data))
		}
		return s
	case *parse.ActionNode:
		return 1 + steps(n.Pipe, data)
	case *parse.PipeNode:
		if n == nil {
			return 0
		}
		s := 0
		for _, c := range n.Cmds {
			s += callSteps + len(c.Args)
		}
		return s
	case *parse.IfNode:
		return 1 + steps(n.Pipe, data) + steps(n.List, data) + steps(n.ElseList, data)
	case *parse.WithNode:
		return 1 + steps(n.Pipe, data) + steps(n.List, data) + steps(n.ElseList, data)
	case *parse.RangeNode:
		times := len(data.Outcomes)
		if rangedList(n) == "FailedVersions" {
			times = 0
			for _, o := range data.Outcomes {
				times = max(times, len(o.FailedVersions))
			}
		}
		return saturated(1 + steps(n.Pipe, data) + saturated(max(times, 1)*steps(n.List, data)) + steps(n.ElseList, data))
	}
	return 1
}

// saturated keeps a count of steps from passing maxSteps by far, so that no sum or product of them
// can overflow: past maxSteps, the count only says "too many".
func saturated(n int) int { return min(n, maxSteps+1) }

// execute runs t on data, failing before it starts when it could take more than maxSteps, and once
// the output passes maxMessage.
func execute(t *template.Template, data MessageData) (string, error) {
	if n := steps(t.Root, data); n > maxSteps {
		return "", fmt.Errorf("the message takes %d steps for %d configs, more than %d", n, len(data.Outcomes), maxSteps)
	}
	w := &boundedWriter{}
	err := t.Execute(w, data)
	return w.b.String(), err
}

type boundedWriter struct{ b strings.Builder }

func (w *boundedWriter) Write(p []byte) (int, error) {
	if w.b.Len()+len(p) > maxMessage {
		return 0, fmt.Errorf("the message is longer than %d bytes", maxMessage)
	}
	return w.b.Write(p)
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
	msg, err := "", errors.New("no template")
	if t != nil {
		msg, err = execute(t, data)
	}
	if err != nil || strings.TrimSpace(msg) == "" {
		msg, _ = execute(defaultMessage, data) // tried on every shape of data by its tests
	}
	if !strings.HasSuffix(msg, "\n") {
		msg += "\n"
	}
	return msg
}

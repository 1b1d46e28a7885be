package cli

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/rollout"
	"github.com/rollgate/rollgate/internal/window"
)

// errLint: some object of the file did not pass.
var errLint = errors.New("the file has problems")

func (a *app) lintCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "lint FILE",
		Short: "Check rollgate objects in a YAML file (- for stdin) against the API server's schema and rules, by server-side dry run, or --offline",
		Long: "lint checks each rollgate object of the file. Offline it decodes it strictly (no unknown or mistyped fields) and parses " +
			"what the manager parses (the version constraint, the windows' schedules and time zones). Unless --offline, each object is " +
			"then applied to the API server with dryRun=All, which runs the CRD's schema and CEL rules and admission, and stores nothing.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			in := io.Reader(os.Stdin)
			if args[0] != "-" {
				f, err := os.Open(args[0])
				if err != nil {
					return err
				}
				defer func() { _ = f.Close() }()
				in = f
			}
			return a.lint(cmd.Context(), in)
		},
	}
	cmd.Flags().BoolVar(&a.offline, "offline", false, "check without the API server: strict decoding and what the manager parses")
	return cmd
}

func (a *app) lint(ctx context.Context, in io.Reader) error {
	r := utilyaml.NewYAMLReader(bufio.NewReader(in))
	failed := false
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &u.Object); err != nil || u.Object == nil {
			a.printf("error: a document is not a Kubernetes object: %v\n", err)
			failed = true
			continue
		}
		if u.GroupVersionKind().Group != v1alpha1.GroupVersion.Group {
			continue
		}
		if u.GetNamespace() == "" {
			u.SetNamespace(a.namespace)
		}
		what := u.GetKind() + " " + u.GetNamespace() + "/" + u.GetName()
		problems := offlineProblems(u.GetKind(), doc, a.now())
		if len(problems) == 0 && !a.offline {
			if err := a.c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.DryRunAll, client.ForceOwnership, client.FieldOwner(FieldManager)); err != nil {
				problems = append(problems, err.Error())
			}
		}
		if len(problems) == 0 {
			a.printf("ok: %s\n", what)
			continue
		}
		failed = true
		for _, p := range problems {
			a.printf("error: %s: %s\n", what, p)
		}
	}
	if failed {
		return errLint
	}
	return nil
}

// offlineProblems is what can be told of a rollgate object without the API server: fields it does
// not know or of the wrong type, and what the manager would refuse to parse.
func offlineProblems(kind string, doc []byte, now time.Time) []string {
	var obj any
	switch kind {
	case "RollingUpgradeConfig":
		obj = &v1alpha1.RollingUpgradeConfig{}
	case "ApplicationVersion":
		obj = &v1alpha1.ApplicationVersion{}
	case "GitWriteBack":
		obj = &v1alpha1.GitWriteBack{}
	case "RolloutCalendar":
		obj = &v1alpha1.RolloutCalendar{}
	default:
		return []string{"rollgate.dev has no kind " + kind}
	}
	if err := yaml.UnmarshalStrict(doc, obj); err != nil {
		return []string{err.Error()}
	}
	var problems []string
	schedule := func(field, cron string, d *metav1.Duration, tz string) {
		win, err := window.Parse(cron, v1alpha1.DurationOrZero(d), tz)
		if err == nil {
			err = win.Check(now) // a schedule that never fires
		}
		if err != nil {
			problems = append(problems, field+": "+err.Error())
		}
	}
	windows := func(field string, ws []v1alpha1.CalendarWindow) {
		for i, w := range ws {
			if w.Schedule != "" {
				schedule(fmt.Sprintf("%s[%d] (%s)", field, i, w.Name), w.Schedule, w.Duration, w.TimeZone)
			}
		}
	}
	switch o := obj.(type) {
	case *v1alpha1.RollingUpgradeConfig:
		if _, err := rollout.PolicyOf(o.Spec); err != nil {
			problems = append(problems, err.Error())
		}
		if mw := o.Spec.MaintenanceWindow; mw != nil {
			schedule("spec.maintenanceWindow", mw.Schedule, mw.Duration, mw.TimeZone)
		}
		windows("spec.windows", o.Spec.Windows)
	case *v1alpha1.RolloutCalendar:
		windows("spec.windows", o.Spec.Windows)
	}
	return problems
}

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/renovate"
)

// renovateFieldManager owns the fields `rollgate renovate import` writes.
const renovateFieldManager = "rollgate-renovate"

const renovateUsage = `usage: rollgate renovate import --report FILE [--dry-run] [--namespace NS] [--kubeconfig FILE]

Reads a Renovate JSON report (renovate --platform=local --report-type=file --report-path=FILE) and
sets the ApplicationVersion of every RollingUpgradeConfig whose spec.image Renovate found an update
for, to the highest new version the config's constraint allows (server-side apply, field manager
rollgate-renovate). Running it twice changes nothing the second time.`

// runRenovate is the "rollgate renovate" command.
func runRenovate(ctx context.Context, args []string, out io.Writer) error {
	if len(args) == 0 || args[0] != "import" {
		return errors.New(renovateUsage)
	}
	fs := flag.NewFlagSet("rollgate renovate import", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() { fmt.Fprintln(out, renovateUsage); fs.PrintDefaults() }
	reportPath := fs.String("report", "", "Renovate JSON report to read (required).")
	dryRun := fs.Bool("dry-run", false, "Print what would change and change nothing.")
	namespace := fs.String("namespace", "", "Only configs in this namespace. Default: all namespaces.")
	kubeconfig := fs.String("kubeconfig", "", "Path to a kubeconfig. Default: $KUBECONFIG, in-cluster, ~/.kube/config.")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if *reportPath == "" || fs.NArg() > 0 {
		return errors.New(renovateUsage)
	}
	report, err := readReport(*reportPath, out)
	if err != nil {
		return err
	}

	cfg, err := options{Kubeconfig: *kubeconfig}.restConfig()
	if err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{Scheme: newScheme()})
	if err != nil {
		return err
	}
	configs, existing, err := listForImport(ctx, c, *namespace)
	if err != nil {
		return err
	}
	changes, skipped := renovate.Plan(report.Dependencies(), configs, existing)
	for _, s := range skipped {
		fmt.Fprintln(out, "skipped:", s)
	}
	if len(changes) == 0 {
		fmt.Fprintln(out, "no RollingUpgradeConfig manages an image the report has updates for")
	}
	for _, ch := range changes {
		prefix := "applied:"
		switch {
		case ch.Unchanged():
			prefix = "ok:"
		case *dryRun:
			prefix = "would apply:"
		default:
			if err := applyVersion(ctx, c, ch); err != nil {
				return fmt.Errorf("%s: %w", ch, err)
			}
		}
		fmt.Fprintln(out, prefix, ch)
	}
	return nil
}

// applyVersion writes spec.image, spec.version and (when the report dates it) spec.releasedAt of
// the ApplicationVersion by server-side apply: a releasedAt of an earlier version that this
// command wrote goes with it.
func applyVersion(ctx context.Context, c client.Client, ch renovate.Change) error {
	spec := map[string]any{"image": ch.Image, "version": ch.To}
	if !ch.ReleasedAt.IsZero() {
		spec["releasedAt"] = ch.ReleasedAt.UTC().Format(time.RFC3339)
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(),
		"kind":       "ApplicationVersion",
		"metadata":   map[string]any{"name": ch.Name, "namespace": ch.Namespace},
		"spec":       spec,
	}}
	return c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(renovateFieldManager), client.ForceOwnership)
}

// listForImport reads the configs an import may announce versions to, and the versions their
// ApplicationVersions announce now, by namespace/name.
func listForImport(ctx context.Context, c client.Client, namespace string) ([]v1alpha1.RollingUpgradeConfig, map[string]string, error) {
	var configs v1alpha1.RollingUpgradeConfigList
	var versions v1alpha1.ApplicationVersionList
	if err := c.List(ctx, &configs, client.InNamespace(namespace)); err != nil {
		return nil, nil, fmt.Errorf("listing RollingUpgradeConfigs: %w", err)
	}
	if err := c.List(ctx, &versions, client.InNamespace(namespace)); err != nil {
		return nil, nil, fmt.Errorf("listing ApplicationVersions: %w", err)
	}
	existing := map[string]string{}
	for _, av := range versions.Items {
		existing[av.Namespace+"/"+av.Name] = av.Spec.Version
	}
	return configs.Items, existing, nil
}

// readReport reads Renovate's report at path, and prints the problems Renovate reported in it.
func readReport(path string, out io.Writer) (*renovate.Report, error) {
	f, err := os.Open(path) //nolint:gosec // the report the person running the command names
	if err != nil {
		return nil, err
	}
	defer f.Close()
	report, err := renovate.Parse(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w; nothing was changed", path, err)
	}
	for _, p := range report.AllProblems() {
		fmt.Fprintln(out, "renovate reported a problem:", p)
	}
	return report, nil
}

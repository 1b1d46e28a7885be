package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/spf13/cobra"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rollgate/rollgate/api/v1alpha1"
)

func (a *app) getCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "get [NAME]",
		Short: "List configs: whether each is Ready, why, its versions, what holds it and its next window",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.get(cmd.Context(), args)
		},
	}
	cmd.Flags().BoolVarP(&a.all, "all-namespaces", "A", false, "list the configs of every namespace")
	return cmd
}

func (a *app) get(ctx context.Context, names []string) error {
	var configs []v1alpha1.RollingUpgradeConfig
	if len(names) == 1 {
		ruc, err := a.config(ctx, names[0])
		if err != nil {
			return err
		}
		configs = append(configs, *ruc)
	} else {
		var list v1alpha1.RollingUpgradeConfigList
		var opts []client.ListOption
		if !a.all {
			opts = append(opts, client.InNamespace(a.namespace))
		}
		if err := a.c.List(ctx, &list, opts...); err != nil {
			return err
		}
		configs = list.Items
	}
	if len(configs) == 0 {
		a.printf("No RollingUpgradeConfigs found.\n")
		return nil
	}
	return printTable(a.out, "", table(configs, a.all, a.now()))
}

// printTable prints rows as aligned columns, each line after indent.
func printTable(out io.Writer, indent string, rows [][]string) error {
	w := tabwriter.NewWriter(out, 0, 4, 3, ' ', 0)
	for _, row := range rows {
		_, _ = fmt.Fprintln(w, indent+strings.Join(row, "\t"))
	}
	return w.Flush()
}

// table is what get prints: a header and a row per config, sorted by namespace and name.
func table(configs []v1alpha1.RollingUpgradeConfig, namespaces bool, now time.Time) [][]string {
	header := []string{"NAME", "READY", "STATUS", "CURRENT", "TARGET", "HELD BY", "NEXT WINDOW"}
	if namespaces {
		header = append([]string{"NAMESPACE"}, header...)
	}
	sorted := slices.Clone(configs)
	slices.SortFunc(sorted, func(x, y v1alpha1.RollingUpgradeConfig) int {
		return strings.Compare(x.Namespace+"/"+x.Name, y.Namespace+"/"+y.Name)
	})
	rows := [][]string{header}
	for _, c := range sorted {
		st := c.Status
		ready, status := "Unknown", "-"
		if r := apimeta.FindStatusCondition(st.Conditions, meta.ReadyCondition); r != nil {
			ready, status = string(r.Status), r.Reason
		}
		row := []string{c.Name, ready, status, orDash(st.CurrentVersion), orDash(st.TargetVersion), heldBy(st.Hold, now), nextWindow(st, now)}
		if namespaces {
			row = append([]string{c.Namespace}, row...)
		}
		rows = append(rows, row)
	}
	return rows
}

// heldBy is the gate that holds the version, the calendars that hold it, and for how long.
func heldBy(h *v1alpha1.Hold, now time.Time) string {
	if h == nil {
		return "-"
	}
	s := string(h.Gate)
	if len(h.Calendars) > 0 {
		s += " (" + strings.Join(h.Calendars, ",") + ")"
	}
	if h.Since != nil {
		s += " for " + duration.HumanDuration(now.Sub(h.Since.Time))
	}
	return s
}

func nextWindow(st v1alpha1.RollingUpgradeConfigStatus, now time.Time) string {
	if st.NextWindow == nil {
		return "-"
	}
	if d := st.NextWindow.Sub(now); d > 0 {
		return "in " + duration.HumanDuration(d)
	}
	return "now"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

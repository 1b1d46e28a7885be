package cli

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/buildinfo"
)

func (a *app) historyCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "history NAME",
		Short: "List a config's rollouts and the acts on its versions, oldest first",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ruc, err := a.config(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return printTable(a.out, "", historyTable(ruc.Status))
		},
	}
}

// historyTable is the version history with a header, oldest first.
func historyTable(st v1alpha1.RollingUpgradeConfigStatus) [][]string {
	rows := [][]string{{"APPLIED", "VERSION", "RESULT", "BY", "REASON"}}
	for _, e := range st.VersionHistory {
		rows = append(rows, []string{e.AppliedAt.UTC().Format(time.RFC3339), e.Version, string(e.Status), orDash(e.RequestedBy), orDash(e.Reason)})
	}
	return rows
}

func versionCommand(out io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the plugin's version",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := fmt.Fprintln(out, "kubectl-"+buildinfo.Get().String())
			return err
		},
	}
}

package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rollgate/rollgate/api/v1alpha1"
)

// The acts write annotations (and spec.suspend) by JSON merge patch, as kubectl annotate does: a
// namespace editor may, and a Git repository may hold the same annotations.

func (a *app) approveCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "approve NAME VERSION",
		Short: "Approve VERSION for a config with spec.approval (rollgate.dev/approve)",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, name, v := cmd.Context(), args[0], args[1]
			ruc, err := a.config(ctx, name)
			if err != nil {
				return err
			}
			by := a.who(ctx)
			if err := a.annotate(ctx, name, map[string]*string{v1alpha1.ApproveAnnotation: &v, v1alpha1.ApprovedByAnnotation: orNil(by)}); err != nil {
				return err
			}
			a.printf("approved %s for %s/%s%s\n", v, a.namespace, name, byWhom(by))
			if h := ruc.Status.Hold; h == nil || h.Gate != v1alpha1.GateApproval || h.Version != v {
				a.printf("note: %s/%s does not wait for the approval of %s now (%s)\n", a.namespace, name, v, why(ruc, "", a.now()))
			}
			return nil
		},
	}
}

func (a *app) rejectCommand() *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "reject NAME VERSION",
		Short: "Put VERSION on the failed list without a rollout; a rollout of it in flight is rolled back (rollgate.dev/reject)",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.request(cmd.Context(), args[0], args[1], act{annotation: v1alpha1.RejectAnnotation, by: v1alpha1.RejectedByAnnotation,
				undoes: v1alpha1.RetryAnnotation, done: "rejected", reason: &reason,
				last: func(st v1alpha1.RollingUpgradeConfigStatus) string { return st.LastReject },
				holds: func(st v1alpha1.RollingUpgradeConfigStatus, v string) bool {
					return slices.Contains(st.FailedVersions, v)
				}})
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why, for the history (rollgate.dev/reject-reason)")
	return cmd
}

func (a *app) retryCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "retry NAME VERSION",
		Short: "Take VERSION off the failed list so that it may roll out again (rollgate.dev/retry)",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.request(cmd.Context(), args[0], args[1], act{annotation: v1alpha1.RetryAnnotation, by: v1alpha1.RetriedByAnnotation,
				undoes: v1alpha1.RejectAnnotation, done: "retried",
				last: func(st v1alpha1.RollingUpgradeConfigStatus) string { return st.LastRetry },
				holds: func(st v1alpha1.RollingUpgradeConfigStatus, v string) bool {
					return !slices.Contains(st.FailedVersions, v)
				}})
		},
	}
}

// act is a reject or a retry: the annotation, who set it, the other one (which it takes back
// when that names the same version), the record of the value last acted on, and whether the
// status holds the act's outcome for a version already.
type act struct {
	annotation, by, undoes, done string
	reason                       *string
	last                         func(v1alpha1.RollingUpgradeConfigStatus) string
	holds                        func(st v1alpha1.RollingUpgradeConfigStatus, v string) bool
}

// request sets the act's annotation to v. Each value is acted on once, so when the status says v
// was acted on (and its outcome has been undone since), the annotation is removed first (if it is
// still there) and the manager is given time to see it go and clear its record; should it not,
// the annotation stays removed and the plugin says so.
func (a *app) request(ctx context.Context, name, v string, x act) error {
	ruc, err := a.config(ctx, name)
	if err != nil {
		return err
	}
	if x.last(ruc.Status) == v && x.holds(ruc.Status, v) {
		a.printf("%s/%s: %s was %s already\n", a.namespace, name, v, x.done)
		return nil
	}
	if x.last(ruc.Status) == v {
		if _, set := ruc.Annotations[x.annotation]; set {
			if err := a.annotate(ctx, name, map[string]*string{x.annotation: nil}); err != nil {
				return err
			}
		}
		if err := wait.PollUntilContextTimeout(ctx, time.Second, a.settle, true, func(ctx context.Context) (bool, error) {
			ruc, err := a.config(ctx, name)
			if err != nil {
				return false, err
			}
			return x.last(ruc.Status) != v, nil
		}); err != nil {
			if !wait.Interrupted(err) {
				return err
			}
			return fmt.Errorf("%s=%s was acted on before, and the manager did not see it removed within %s (is it running?); "+
				"the annotation stays removed", x.annotation, v, a.settle)
		}
	}
	by := a.who(ctx)
	patch := map[string]*string{x.annotation: &v, x.by: orNil(by)}
	if ruc.Annotations[x.undoes] == v {
		patch[x.undoes] = nil
	}
	if x.reason != nil {
		patch[v1alpha1.RejectReasonAnnotation] = orNil(*x.reason)
	}
	if err := a.annotate(ctx, name, patch); err != nil {
		return err
	}
	a.printf("%s %s for %s/%s%s\n", x.done, v, a.namespace, name, byWhom(by))
	return nil
}

func (a *app) resetCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "reset NAME",
		Short: "Close the circuit breaker; failed versions stay failed (rollgate.dev/reset-circuit)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			token := strconv.FormatInt(a.now().UnixNano(), 10)
			if err := a.annotate(cmd.Context(), args[0], map[string]*string{v1alpha1.ResetCircuitAnnotation: &token}); err != nil {
				return err
			}
			a.printf("reset the circuit of %s/%s\n", a.namespace, args[0])
			return nil
		},
	}
}

// suspendCommand is suspend (on) or resume: spec.suspend.
func (a *app) suspendCommand(on bool) *cobra.Command {
	use, short, done := "suspend NAME", "Stop automatic rollouts; one in flight is still watched to its end (spec.suspend)", "suspended"
	if !on {
		use, short, done = "resume NAME", "Resume automatic rollouts (spec.suspend false)", "resumed"
	}
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			patch, err := json.Marshal(map[string]any{"spec": map[string]bool{"suspend": on}})
			if err != nil {
				return err
			}
			if err := a.patch(cmd.Context(), args[0], patch); err != nil {
				return err
			}
			a.printf("%s %s/%s\n", done, a.namespace, args[0])
			return nil
		},
	}
}

// annotate sets (or, for nil, removes) annotations of a config.
func (a *app) annotate(ctx context.Context, name string, annotations map[string]*string) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": annotations}})
	if err != nil {
		return err
	}
	return a.patch(ctx, name, patch)
}

func (a *app) patch(ctx context.Context, name string, patch []byte) error {
	ruc := &v1alpha1.RollingUpgradeConfig{}
	ruc.Namespace, ruc.Name = a.namespace, name
	return a.c.Patch(ctx, ruc, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(FieldManager))
}

func orNil(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func byWhom(by string) string {
	if by == "" {
		return ""
	}
	return " as " + by
}

package cli

import (
	"fmt"
	"slices"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/spf13/cobra"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/rollout"
)

func (a *app) whyCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "why NAME [VERSION]",
		Short: "Say what holds a config's version (or VERSION), since and until when, and what lets it go",
		Args:  cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ruc, err := a.config(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			v := ""
			if len(args) == 2 {
				v = args[1]
			}
			a.printf("%s\n", why(ruc, v, a.now()))
			return nil
		},
	}
}

// why answers "what holds this version?" from the config's status: the gate in status.hold, a
// rollout in flight, the failed list and the history, or Ready's message. version "" asks of the
// version the config aims at.
func why(ruc *v1alpha1.RollingUpgradeConfig, v string, now time.Time) string {
	st := ruc.Status
	name := ruc.Namespace + "/" + ruc.Name
	if s := apimeta.FindStatusCondition(st.Conditions, meta.StalledCondition); s != nil && s.Status == "True" {
		return fmt.Sprintf("%s cannot go on (Stalled, %s): %s", name, s.Reason, s.Message)
	}
	switch {
	case v == "" || v == st.TargetVersion:
		return aimedAt(ruc, now)
	case v == st.CurrentVersion:
		return fmt.Sprintf("%s runs %s: it passed its health check", name, v)
	case slices.Contains(st.FailedVersions, v):
		return failedWhy(ruc, v)
	}
	if p, err := rollout.PolicyOf(ruc.Spec); err == nil {
		if c := p.Choose([]string{v}, st.CurrentVersion, st.FailedVersions); c.Tag == "" && len(c.Skipped) > 0 {
			return fmt.Sprintf("%s never rolls out %s: %s", name, v, c.Skipped[0].Reason)
		}
	}
	return fmt.Sprintf("%s is not a candidate of %s now: no source announces it, or a newer one is chosen (%s aims at %s, the best eligible is %s)",
		v, name, name, orDash(st.TargetVersion), orDash(st.AvailableVersion))
}

// aimedAt says what becomes of the version the config aims at: a gate holds it, it rolls out or
// back, or nothing is to be done.
func aimedAt(ruc *v1alpha1.RollingUpgradeConfig, now time.Time) string {
	st := ruc.Status
	ready := apimeta.FindStatusCondition(st.Conditions, meta.ReadyCondition)
	msg := ""
	if ready != nil {
		msg = ready.Message
	}
	h := st.Hold
	if h == nil {
		if st.TargetVersion == "" {
			return fmt.Sprintf("nothing holds %s/%s: %s", ruc.Namespace, ruc.Name, msg)
		}
		return fmt.Sprintf("%s (%s): %s", st.TargetVersion, st.Phase, msg)
	}
	s := fmt.Sprintf("%s is held by the %s gate", orDash(h.Version), h.Gate)
	if len(h.Calendars) > 0 {
		s += fmt.Sprintf(" of RolloutCalendar %v", h.Calendars)
	}
	if h.Since != nil {
		s += fmt.Sprintf(", since %s (%s)", h.Since.UTC().Format(time.RFC3339), duration.HumanDuration(now.Sub(h.Since.Time)))
	}
	if h.Until != nil {
		s += fmt.Sprintf(", until %s (in %s)", h.Until.UTC().Format(time.RFC3339), duration.HumanDuration(h.Until.Sub(now)))
	}
	s += " (" + h.Reason + "): " + h.Message
	if h.Gate == v1alpha1.GateApproval {
		s += fmt.Sprintf("\nto let it go: kubectl rollgate -n %s approve %s %s", ruc.Namespace, ruc.Name, h.Version)
	}
	return s
}

// failedWhy says how a version came onto the failed list, by its newest history entry, and how
// to take it off.
func failedWhy(ruc *v1alpha1.RollingUpgradeConfig, v string) string {
	s := fmt.Sprintf("%s is on the failed list of %s/%s and never rolls out again", v, ruc.Namespace, ruc.Name)
	for _, e := range slices.Backward(ruc.Status.VersionHistory) {
		if e.Version != v || (e.Status != v1alpha1.ResultRolledBack && e.Status != v1alpha1.ResultRejected) {
			continue
		}
		at := e.AppliedAt.UTC().Format(time.RFC3339)
		if e.Status == v1alpha1.ResultRejected {
			s += ": rejected " + at
			if e.RequestedBy != "" {
				s += " by " + e.RequestedBy
			}
		} else {
			s += ": rolled back, its rollout started " + at
		}
		if e.Reason != "" {
			s += " (" + e.Reason + ")"
		}
		break
	}
	return s + fmt.Sprintf("\nto try it again: kubectl rollgate -n %s retry %s %s", ruc.Namespace, ruc.Name, v)
}

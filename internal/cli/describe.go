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
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/kube"
)

// How much of a config's past describe shows.
const (
	describedHistory = 5
	describedEvents  = 10
)

func (a *app) describeCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "describe NAME",
		Short: "Show a config with its workload and pods, what holds it, its last rollouts and its events",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.describe(cmd.Context(), args[0])
		},
	}
}

// scene is what describe reads: the config, its workload and pods, and the config's events.
type scene struct {
	config   *v1alpha1.RollingUpgradeConfig
	workload *kube.Workload // nil: not found
	pods     []corev1.Pod
	events   []eventsv1.Event
}

func (a *app) describe(ctx context.Context, name string) error {
	ruc, err := a.config(ctx, name)
	if err != nil {
		return err
	}
	s := scene{config: ruc}
	if s.workload, err = kube.ReadWorkload(ctx, a.c, ruc); err != nil {
		return err
	}
	if s.workload != nil {
		if s.pods, err = s.workload.Pods(ctx, a.c); err != nil {
			return err
		}
	}
	var events eventsv1.EventList
	if err := a.c.List(ctx, &events, client.InNamespace(a.namespace),
		client.MatchingFields{"regarding.kind": "RollingUpgradeConfig", "regarding.name": name}); err != nil {
		return err
	}
	s.events = events.Items
	s.write(a.out, a.now())
	return nil
}

// write prints the scene as sections, each a few lines.
func (s scene) write(out io.Writer, now time.Time) {
	c, st := s.config, s.config.Status
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	line := func(label, value string) { _, _ = fmt.Fprintf(w, "%s:\t%s\n", label, value) }
	line("Name", c.Namespace+"/"+c.Name)
	line("Image", c.Spec.Image+", versions "+versionRules(c.Spec))
	line("Workload", s.workloadLine())
	line("Phase", string(st.Phase))
	if r := apimeta.FindStatusCondition(st.Conditions, meta.ReadyCondition); r != nil {
		line("Ready", fmt.Sprintf("%s %s: %s", r.Status, r.Reason, r.Message))
	}
	line("Versions", fmt.Sprintf("current %s, target %s, available %s", orDash(st.CurrentVersion), orDash(st.TargetVersion), orDash(st.AvailableVersion)))
	line("Failed", orDash(strings.Join(st.FailedVersions, ", ")))
	circuit := "closed"
	if st.CircuitOpen {
		circuit = "open"
	}
	line("Circuit", fmt.Sprintf("%s, %d consecutive rollbacks of %d", circuit, st.RollbackCount, c.Spec.MaxRollbacks))
	line("Why", strings.ReplaceAll(why(c, "", now), "\n", "\n\t"))
	_ = w.Flush()

	section(out, "Pods", podRows(s.pods, now))
	history := historyTable(st)
	if n := len(history) - 1; n > describedHistory {
		history = append(history[:1], history[len(history)-describedHistory:]...)
	}
	section(out, "History", history)
	section(out, "Events", eventRows(s.events, now))
}

func (s scene) workloadLine() string {
	spec := s.config.Spec
	if s.workload == nil {
		return fmt.Sprintf("%s %s not found", spec.TargetRef.Kind, spec.TargetRef.Name)
	}
	ready := 0
	for _, p := range s.pods {
		if podReady(p) {
			ready++
		}
	}
	images := []string{}
	cs, missing := kube.ManagedContainers(s.workload.PodSpec(), spec.ContainerNames())
	for _, ct := range cs {
		images = append(images, ct.Name+"="+ct.Image)
	}
	for _, name := range missing {
		if name == "" {
			name = "container" // a template without containers
		}
		images = append(images, name+" missing")
	}
	return fmt.Sprintf("%s, %s, %d of %d pods ready", s.workload.Describe(), strings.Join(images, " "), ready, len(s.pods))
}

// section prints a titled table; one with no rows but its header says "none".
func section(out io.Writer, title string, rows [][]string) {
	_, _ = fmt.Fprintf(out, "\n%s:\n", title)
	if len(rows) <= 1 {
		_, _ = fmt.Fprintln(out, "  none")
		return
	}
	_ = printTable(out, "  ", rows)
}

func podRows(pods []corev1.Pod, now time.Time) [][]string {
	rows := [][]string{{"NAME", "READY", "IMAGE", "AGE"}}
	sorted := slices.Clone(pods)
	slices.SortFunc(sorted, func(x, y corev1.Pod) int { return strings.Compare(x.Name, y.Name) })
	for _, p := range sorted {
		img := "-"
		if len(p.Spec.Containers) > 0 {
			img = p.Spec.Containers[0].Image
		}
		rows = append(rows, []string{p.Name, fmt.Sprint(podReady(p)), img, duration.HumanDuration(now.Sub(p.CreationTimestamp.Time))})
	}
	return rows
}

func podReady(p corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// eventRows are the newest events, newest last, as kubectl describe shows them.
func eventRows(events []eventsv1.Event, now time.Time) [][]string {
	sorted := slices.Clone(events)
	when := func(e eventsv1.Event) time.Time {
		if e.Series != nil {
			return e.Series.LastObservedTime.Time
		}
		return e.EventTime.Time
	}
	slices.SortFunc(sorted, func(x, y eventsv1.Event) int { return when(x).Compare(when(y)) })
	if len(sorted) > describedEvents {
		sorted = sorted[len(sorted)-describedEvents:]
	}
	rows := [][]string{{"AGE", "TYPE", "REASON", "MESSAGE"}}
	for _, e := range sorted {
		rows = append(rows, []string{duration.HumanDuration(now.Sub(when(e))), e.Type, e.Reason, e.Note})
	}
	return rows
}

// versionRules says how a config reads its tags: the semver constraint, its tag policy and
// filter, or the tag it follows.
func versionRules(spec v1alpha1.RollingUpgradeConfigSpec) string {
	if spec.FollowTag != "" {
		return "the digests of " + spec.FollowTag
	}
	rules := orDash(spec.VersionConstraint)
	if tp := spec.TagPolicy; tp != nil {
		by, descending := tp.Ordered()
		rules = by
		if descending {
			rules += " (the lowest the newest)"
		}
	}
	if f := spec.FilterTags; f != nil {
		rules += ", tags matching " + f.Pattern
		if f.Extract != "" {
			rules += " by " + f.Extract
		}
	}
	return rules
}

package renovate

import (
	"fmt"
	"slices"
	"time"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/image"
	"github.com/rollgate/rollgate/internal/rollout"
)

// Change is one ApplicationVersion to create or update.
type Change struct {
	Namespace string
	Name      string // the ApplicationVersion
	Config    string // the RollingUpgradeConfig it feeds
	Image     string
	From      string // the version it has now; "" when it does not exist
	To        string
	// ReleasedAt is when To was released, as Renovate's report says; zero when it does not.
	ReleasedAt time.Time
	Because    string // which file and manager of the report announced it
}

// Unchanged reports whether the ApplicationVersion already says To.
func (c Change) Unchanged() bool { return c.From == c.To }

func (c Change) String() string {
	what := fmt.Sprintf("%s -> %s", orNew(c.From), c.To)
	if c.Unchanged() {
		what = c.To + " (unchanged)"
	}
	return fmt.Sprintf("%s/%s: ApplicationVersion %s %s for %s, from %s", c.Namespace, c.Config, c.Name, what, c.Image, c.Because)
}

func orNew(s string) string {
	if s == "" {
		return "(new)"
	}
	return s
}

// Plan matches the report's dependencies with the configs: for each config whose spec.image is a
// dependency's image and that reads an ApplicationVersion, the highest of Renovate's new values
// that the config's constraint allows goes into that ApplicationVersion. existing holds the
// versions of the ApplicationVersions there are, by namespace/name. Configs without an
// applicationVersion source, and dependencies no config manages, are listed in skipped.
func Plan(deps []Dependency, configs []v1alpha1.RollingUpgradeConfig, existing map[string]string) (changes []Change, skipped []string) {
	for _, c := range configs {
		var avName string
		for _, s := range c.Spec.Sources {
			if s.ApplicationVersion != nil {
				avName = s.ApplicationVersion.Name
				break
			}
		}
		policy, err := rollout.PolicyOf(c.Spec)
		if err != nil {
			skipped = append(skipped, fmt.Sprintf("%s/%s: %v", c.Namespace, c.Name, err))
			continue
		}
		var values []string
		var because []string
		releasedAt := map[string]time.Time{}
		for _, d := range deps {
			if !image.SameRepositoryName(d.DepName, c.Spec.Image) {
				continue
			}
			for _, u := range d.Updates {
				values = append(values, u.NewValue)
				if at, seen := releasedAt[u.NewValue]; !u.ReleasedAt().IsZero() && (!seen || u.ReleasedAt().Before(at)) {
					releasedAt[u.NewValue] = u.ReleasedAt()
				}
			}
			because = append(because, fmt.Sprintf("%s (%s)", d.PackageFile, d.Manager))
		}
		if len(values) == 0 {
			continue
		}
		slices.Sort(because)
		if avName == "" {
			skipped = append(skipped, fmt.Sprintf("%s/%s: Renovate has updates for %s, but the config has no applicationVersion source", c.Namespace, c.Name, c.Spec.Image))
			continue
		}
		// Only forward: an ApplicationVersion that is already newer keeps its version.
		from := existing[c.Namespace+"/"+avName]
		current := ""
		if policy.Reads(from) {
			current = from
		}
		choice := policy.Choose(append(values, from), current, nil)
		if from != "" && (choice.Tag == "" || choice.Tag == from) {
			changes = append(changes, Change{Namespace: c.Namespace, Name: avName, Config: c.Name, Image: c.Spec.Image,
				From: from, To: from, Because: joinUnique(because)})
			continue
		}
		if choice.Tag == "" {
			skipped = append(skipped, fmt.Sprintf("%s/%s: no update of %s within %q", c.Namespace, c.Name, c.Spec.Image, c.Spec.VersionConstraint))
			continue
		}
		changes = append(changes, Change{Namespace: c.Namespace, Name: avName, Config: c.Name, Image: c.Spec.Image,
			From: from, To: choice.Tag, ReleasedAt: releasedAt[choice.Tag], Because: joinUnique(because)})
	}
	return changes, skipped
}

func joinUnique(s []string) string {
	s = slices.Compact(s)
	out := ""
	for i, v := range s {
		if i > 0 {
			out += ", "
		}
		out += v
	}
	return out
}

package rollout

import (
	"cmp"
	"slices"
	"time"

	"github.com/Masterminds/semver/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rollgate/rollgate/api/v1alpha1"
)

// releaseAge holds the candidates younger than spec.minReleaseAge (version.Policy.ChooseHeld asks
// it of each candidate that is eligible otherwise) and keeps when each was first seen, the release
// time of a version no source dates.
type releaseAge struct {
	min   time.Duration
	now   time.Time
	dated map[string]time.Time // by tag: the earliest release time a source gives
	seen  map[string]time.Time // status.seenVersions, and what this look saw first
}

// newReleaseAge is the hold of a config with spec.minReleaseAge; nil without it.
func newReleaseAge(in Input, st *v1alpha1.RollingUpgradeConfigStatus) *releaseAge {
	minAge := in.Config.Spec.MinReleaseAgeOrZero()
	if minAge <= 0 {
		return nil
	}
	r := &releaseAge{min: minAge, now: in.Now.UTC().Truncate(time.Second), dated: map[string]time.Time{}, seen: map[string]time.Time{}}
	for _, c := range in.Candidates {
		if at, ok := r.dated[c.Tag]; !c.ReleasedAt.IsZero() && (!ok || c.ReleasedAt.Before(at)) {
			r.dated[c.Tag] = c.ReleasedAt
		}
	}
	for _, s := range st.SeenVersions {
		r.seen[s.Version] = s.FirstSeen.Time
	}
	return r
}

// hold reports whether tag is too young, and records the first sight of it.
func (r *releaseAge) hold(tag string) bool {
	if _, ok := r.seen[tag]; !ok {
		r.seen[tag] = r.now
	}
	return r.now.Before(r.eligibleAt(tag))
}

// released is when tag was released: the earliest time a source gives, else its first sight. dated
// says whether a source gave it.
func (r *releaseAge) released(tag string) (at time.Time, dated bool) {
	if at, ok := r.dated[tag]; ok {
		return at, true
	}
	return r.seen[tag], false
}

func (r *releaseAge) eligibleAt(tag string) time.Time {
	at, _ := r.released(tag)
	return at.Add(r.min)
}

// record writes the first sights into st: of the versions newer than the current one, the
// MaxSeenVersions seen first. Keeping the oldest sights guarantees progress: a source that
// publishes faster than spec.minReleaseAge cannot push each version out before it is old enough
// (the versions beyond the list count as seen now, and wait for a place). A version a source
// stops announcing for a while keeps its first sight.
func (r *releaseAge) record(st *v1alpha1.RollingUpgradeConfigStatus) {
	cur, _ := semver.NewVersion(st.CurrentVersion)
	type seen struct {
		v   *semver.Version
		tag string
		at  time.Time
	}
	var keep []seen
	for tag, at := range r.seen {
		v, err := semver.NewVersion(tag)
		if err != nil || (cur != nil && !v.GreaterThan(cur)) || slices.Contains(st.FailedVersions, tag) {
			continue
		}
		keep = append(keep, seen{v, tag, at})
	}
	slices.SortFunc(keep, func(a, b seen) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		if c := b.v.Compare(a.v); c != 0 {
			return c
		}
		return cmp.Compare(a.tag, b.tag)
	})
	keep = keep[:min(len(keep), v1alpha1.MaxSeenVersions)]
	st.SeenVersions = nil
	for _, s := range keep {
		st.SeenVersions = append(st.SeenVersions, v1alpha1.SeenVersion{Version: s.tag, FirstSeen: metav1.NewTime(s.at)})
	}
}

// releaseNote says when a version too young becomes eligible, and why.
func (r *releaseAge) releaseNote(tag string) string {
	at, dated := r.released(tag)
	how := "first seen by rollgate"
	if dated {
		how = "released"
	}
	return tag + " is eligible from " + r.eligibleAt(tag).UTC().Format(time.RFC3339) + ": " + how + " " + at.UTC().Format(time.RFC3339) +
		", and spec.minReleaseAge is " + r.min.String()
}

// awaitReleaseAge holds the newest version until it is old enough: Pending, with one event.
func awaitReleaseAge(d *Decision, r *releaseAge, tag string, now time.Time) {
	hold{reason: v1alpha1.ReasonAwaitingReleaseAge, event: v1alpha1.EventReleaseAgeRequired, message: r.releaseNote(tag),
		until: r.eligibleAt(tag)}.apply(d, tag, now)
}

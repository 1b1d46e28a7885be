package rollout

import (
	"cmp"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/version"
)

// releaseAge holds the candidates younger than spec.minReleaseAge (version.Policy.ChooseHeld asks
// it of each candidate that is eligible otherwise) and keeps when each was first seen, and the
// build time of its image: the release time of a version no source dates.
type releaseAge struct {
	min   time.Duration
	now   time.Time
	dated map[string]time.Time // by tag: the earliest release time a source gives
	seen  map[string]time.Time // status.seenVersions, and what this look saw first
	// images: the config reads its registry anyway, so the build times of its images are read.
	images  bool
	built   map[string]time.Time // the build times read (status.seenVersions' imageCreated)
	read    map[string]bool      // the versions whose build time was asked for
	answers map[string]CreatedAnswer
	asks    []string // the versions held for the want of their build time
	// policy orders the versions, by the config's rules.
	policy *version.Policy
	// announced, when set, are the only versions whose first sight is kept (a followed tag's).
	announced map[string]bool
}

// MaxCreatedReads bounds the build times one look asks the registry for; the rest wait (by their
// first sight) for the next look.
const MaxCreatedReads = 3

// earliestBuild: no container image is older. A build time before it is a reproducible build's
// fixed date (1970), not a release.
var earliestBuild = time.Date(2013, 1, 1, 0, 0, 0, 0, time.UTC)

// newReleaseAge is the hold of a config with spec.minReleaseAge; nil without it.
func newReleaseAge(in Input, st *v1alpha1.RollingUpgradeConfigStatus, policy *version.Policy) *releaseAge {
	spec := in.Config.Spec
	minAge := spec.MinReleaseAgeOrZero()
	if minAge <= 0 {
		return nil
	}
	r := &releaseAge{min: minAge, now: in.Now.UTC().Truncate(time.Second), dated: map[string]time.Time{}, seen: map[string]time.Time{},
		images: spec.CheckImage || pins(spec) || slices.ContainsFunc(spec.Sources, func(s v1alpha1.VersionSource) bool { return s.Registry != nil }),
		built:  map[string]time.Time{}, read: map[string]bool{}, answers: in.Created, policy: policy}
	if spec.FollowTag != "" {
		// A build is released to a moving tag when the tag moves to it, however long ago it was
		// built; and a digest the tag no longer names is gone, so its sight is not kept.
		r.images, r.announced = false, map[string]bool{}
		for _, c := range in.Candidates {
			r.announced[c.Tag] = true
		}
	}
	for _, c := range in.Candidates {
		if at, ok := r.dated[c.Tag]; !c.ReleasedAt.IsZero() && (!ok || c.ReleasedAt.Before(at)) {
			r.dated[c.Tag] = c.ReleasedAt
		}
	}
	for _, s := range st.SeenVersions {
		r.seen[s.Version] = s.FirstSeen.Time
		r.read[s.Version] = s.ImageRead
		if s.ImageCreated != nil {
			r.built[s.Version] = s.ImageCreated.Time
		}
	}
	return r
}

// hold reports whether tag is too young, and records the first sight of it. A version no source
// dates that is too young by its first sight is held until the build time of its image is read
// (at most MaxCreatedReads a look), and then judged by it.
func (r *releaseAge) hold(tag string) bool {
	if _, ok := r.seen[tag]; !ok {
		r.seen[tag] = r.now
	}
	young := r.now.Before(r.eligibleAt(tag))
	if _, dated := r.dated[tag]; !young || dated || !r.images || r.read[tag] {
		return young
	}
	a, answered := r.answers[tag]
	switch {
	case answered:
		r.read[tag] = true
		if a.Problem == "" && a.At.After(earliestBuild) && !a.At.After(r.now) {
			r.built[tag] = a.At.UTC().Truncate(time.Second)
		}
		return r.now.Before(r.eligibleAt(tag))
	case r.answers == nil:
		r.asks = append(r.asks, tag)
	}
	return true
}

// wanted are the versions whose build time the look needs: those held for the want of it that
// are newer than chosen (the version chosen without them), newest first, at most
// MaxCreatedReads.
func (r *releaseAge) wanted(chosen string) []string {
	var out []string
	for _, tag := range r.asks {
		if c, ok := r.policy.Compare(tag, chosen); chosen == "" && r.policy.Reads(tag) || ok && c > 0 {
			out = append(out, tag)
		}
	}
	slices.SortFunc(out, r.newestFirst)
	if len(out) == 0 {
		return nil
	}
	return out[:min(len(out), MaxCreatedReads)]
}

// newestFirst orders two versions the policy reads, the newest first.
func (r *releaseAge) newestFirst(a, b string) int {
	c, _ := r.policy.Compare(b, a)
	return c
}

// released is when tag was released, and how that is known: the earliest time a source gives,
// else the build time of its image, else its first sight.
func (r *releaseAge) released(tag string) (at time.Time, how string) {
	if at, ok := r.dated[tag]; ok {
		return at, "released"
	}
	if at, ok := r.built[tag]; ok {
		return at, "built"
	}
	return r.seen[tag], "first seen by rollgate"
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
	type seen struct {
		tag string
		at  time.Time
	}
	var keep []seen
	for tag, at := range r.seen {
		if !r.policy.Reads(tag) || slices.Contains(st.FailedVersions, tag) || r.announced != nil && !r.announced[tag] {
			continue
		}
		if c, ok := r.policy.Compare(tag, st.CurrentVersion); ok && c <= 0 {
			continue // not newer than what runs
		}
		keep = append(keep, seen{tag, at})
	}
	slices.SortFunc(keep, func(a, b seen) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		if c := r.newestFirst(a.tag, b.tag); c != 0 {
			return c
		}
		return cmp.Compare(a.tag, b.tag)
	})
	keep = keep[:min(len(keep), v1alpha1.MaxSeenVersions)]
	st.SeenVersions = nil
	for _, s := range keep {
		e := v1alpha1.SeenVersion{Version: s.tag, FirstSeen: metav1.NewTime(s.at), ImageRead: r.read[s.tag]}
		if at, ok := r.built[s.tag]; ok {
			e.ImageCreated = &metav1.Time{Time: at}
		}
		st.SeenVersions = append(st.SeenVersions, e)
	}
}

// releaseNote says when a version too young becomes eligible, and why.
func (r *releaseAge) releaseNote(tag string) string {
	at, how := r.released(tag)
	return tag + " is eligible from " + r.eligibleAt(tag).UTC().Format(time.RFC3339) + ": " + how + " " + at.UTC().Format(time.RFC3339) +
		", and spec.minReleaseAge is " + r.min.String()
}

// awaitReleaseAge holds the newest version until it is old enough: Pending, with one event.
func awaitReleaseAge(d *Decision, r *releaseAge, tag string, now time.Time) {
	hold{gate: v1alpha1.GateReleaseAge, reason: v1alpha1.ReasonAwaitingReleaseAge, event: v1alpha1.EventReleaseAgeRequired, message: r.releaseNote(tag),
		until: r.eligibleAt(tag)}.apply(d, tag, now)
}

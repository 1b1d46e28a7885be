package renderer

import (
	"testing"
	"time"
)

const (
	fightRepo           = "ghcr.io/acme/web"
	gitImage            = fightRepo + ":1.0.0" // what a GitOps tool keeps applying
	targetImage         = fightRepo + ":1.1.0" // what rollgate renders
	nextTargetImage     = fightRepo + ":1.2.0"
	webhookPinnedTarget = targetImage + "@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	gitOps              = "kustomize-controller"
)

var fightNow = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// seenAgo is the reverted-at annotation of a revert seen d before fightNow.
func seenAgo(d time.Duration) string { return fightNow.Add(-d).Format(time.RFC3339) }

func TestRevertCounting(t *testing.T) {
	tests := []struct {
		name string
		// given
		facts renderFacts
		// expected
		render bool
		fight  revertState
		reason string
	}{
		{
			name: "the first render of a new image records no revert",
			facts: renderFacts{Config: "web", Want: targetImage, Running: gitImage, LastImage: "", LastConfig: "",
				Owners: []string{gitOps}},
			render: true,
			reason: "rendering a new image",
		},
		{
			name: "a workload that runs the target with rollgate's annotations is left alone",
			facts: renderFacts{Config: "web", Want: targetImage, Running: targetImage, LastImage: targetImage, LastConfig: "web",
				Owners: []string{"rollgate"}},
			render: false,
		},
		{
			name: "a workload that runs the target with stale annotations is rendered to record it",
			facts: renderFacts{Config: "web", Want: targetImage, Running: targetImage, LastImage: gitImage, LastConfig: "web",
				Owners: []string{gitOps}},
			render: true,
			reason: "recording the target the workload runs already",
		},
		{
			name: "a digest appended by an admission webhook still runs the target and is no revert",
			facts: renderFacts{Config: "web", Want: targetImage, Running: webhookPinnedTarget, LastImage: targetImage, LastConfig: "web",
				Owners: []string{"rollgate"}},
			render: false,
		},
		{
			name: "a render standing in for Git is a fight like any other: at the limit, rendering stops",
			facts: renderFacts{Config: "web", Want: targetImage, Running: gitImage, LastImage: targetImage, LastConfig: "web",
				Owners: []string{gitOps}, StandIn: true, StandInSince: fightNow.Add(-2 * time.Hour), Fight: revertState{count: 3, by: gitOps, at: seenAgo(time.Hour)}},
			render: false,
			fight:  revertState{count: 3, by: gitOps, at: seenAgo(time.Hour)},
			reason: "not rendering again: another field manager keeps changing the image back",
		},
		{
			name: "a render standing in for Git counts the reverts of this stand-in",
			facts: renderFacts{Config: "web", Want: targetImage, Running: gitImage, LastImage: targetImage, LastConfig: "web",
				Owners: []string{gitOps}, StandIn: true, StandInSince: fightNow.Add(-2 * time.Hour), Fight: revertState{count: 1, by: gitOps, at: seenAgo(time.Hour)}},
			render: true,
			fight:  revertState{count: 2, by: gitOps, at: seenAgo(0)},
			reason: "rendering the image again: another field manager changed it back",
		},
		{
			name: "the reverts of a stand-in before this one do not count",
			facts: renderFacts{Config: "web", Want: targetImage, Running: gitImage, LastImage: targetImage, LastConfig: "web",
				Owners: []string{gitOps}, StandIn: true, StandInSince: fightNow.Add(-time.Minute), Fight: revertState{count: 3, by: gitOps, at: seenAgo(time.Hour)}},
			render: true,
			reason: "rendering the image again: it stands in for Git anew",
		},
		{
			name: "an image changed back by another field manager is rendered again and counted once",
			facts: renderFacts{Config: "web", Want: targetImage, Running: gitImage, LastImage: targetImage, LastConfig: "web",
				Owners: []string{gitOps}},
			render: true,
			fight:  revertState{count: 1, by: gitOps, at: seenAgo(0)},
			reason: "rendering the image again: another field manager changed it back",
		},
		{
			name: "the third revert, two hours after the second, is counted and reaches the limit",
			facts: renderFacts{Config: "web", Want: targetImage, Running: gitImage, LastImage: targetImage, LastConfig: "web",
				Fight:  revertState{count: 2, by: gitOps, at: seenAgo(2 * time.Hour)},
				Owners: []string{gitOps}},
			render: true,
			fight:  revertState{count: 3, by: gitOps, at: seenAgo(0)},
			reason: "rendering the image again: another field manager changed it back",
		},
		{
			name: "at the limit of reverts rollgate stops rendering, however old the last revert",
			facts: renderFacts{Config: "web", Want: targetImage, Running: gitImage, LastImage: targetImage, LastConfig: "web",
				Fight:  revertState{count: 3, by: gitOps, at: seenAgo(48 * time.Hour)},
				Owners: []string{gitOps}},
			render: false,
			fight:  revertState{count: 3, by: gitOps, at: seenAgo(48 * time.Hour)},
			reason: "not rendering again: another field manager keeps changing the image back",
		},
		{
			name: "a hand edit under rollgate's own field manager is rendered again and not counted",
			facts: renderFacts{Config: "web", Want: targetImage, Running: gitImage, LastImage: targetImage, LastConfig: "web",
				Fight:  revertState{count: 1, by: gitOps, at: seenAgo(time.Hour)},
				Owners: []string{"rollgate"}},
			render: true,
			fight:  revertState{count: 1, by: gitOps, at: seenAgo(time.Hour)},
			reason: "rendering the image again: changed under rollgate's own field manager",
		},
		{
			name: "a deleted config puts back the current image a version in flight replaced",
			facts: renderFacts{Config: "web", Want: gitImage, Running: targetImage, LastImage: targetImage, LastConfig: "web",
				Owners: []string{"rollgate"}, Deleting: true},
			render: true,
			reason: "rendering a new image",
		},
		{
			name: "a deleted config does not record an image the workload runs already, which would take ownership back",
			facts: renderFacts{Config: "web", Want: gitImage, Running: gitImage, LastImage: targetImage, LastConfig: "web",
				Owners: []string{"rollgate"}, Deleting: true},
			render: false,
		},
		{
			name:   "a deleted config whose workload was released renders nothing",
			facts:  renderFacts{Config: "web", Want: gitImage, Running: targetImage, Owners: []string{gitOps}, Deleting: true},
			render: false,
		},
		{
			name: "a new target after a fight starts the count anew",
			facts: renderFacts{Config: "web", Want: nextTargetImage, Running: gitImage, LastImage: targetImage, LastConfig: "web",
				Fight:  revertState{count: 2, by: gitOps, at: seenAgo(time.Minute)},
				Owners: []string{gitOps}},
			render: true,
			reason: "rendering a new image",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := decideRender(tt.facts, fightNow)
			if got.Render != tt.render {
				t.Errorf("render = %v, want %v", got.Render, tt.render)
			}
			if got.Fight.count != tt.fight.count {
				t.Errorf("reverts = %d, want %d", got.Fight.count, tt.fight.count)
			}
			if got.Fight.by != tt.fight.by {
				t.Errorf("reverted by = %q, want %q", got.Fight.by, tt.fight.by)
			}
			if got.Fight.at != tt.fight.at {
				t.Errorf("reverted at = %q, want %q", got.Fight.at, tt.fight.at)
			}
			if got.Reason != tt.reason {
				t.Errorf("reason = %q, want %q", got.Reason, tt.reason)
			}
		})
	}
}

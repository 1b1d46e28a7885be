package rollout

import (
	"fmt"
	"strings"

	"github.com/rollgate/rollgate/internal/image"
)

// Container is one container a config manages in its workload's pod template (spec.container, or
// each of spec.containers), and the image it runs.
type Container struct {
	Name, Image string
	// Init: an init container (a sidecar among them), which a pod template lists apart.
	Init bool
}

// Running is the container whose image says what the workload runs: RunningIn what rollgate
// rendered into it last, else in the recorded current image. Containers that run different images
// with nothing recorded are a problem: rollgate would have to pick one of their versions as the one
// a rollback returns to.
func Running(cs []Container, rendered, current string) (c Container, problem string) {
	if current == "" && mixed(cs) {
		runs := make([]string, len(cs))
		for i, c := range cs {
			runs[i] = c.Name + " runs " + c.Image
		}
		return Container{}, fmt.Sprintf("the containers it names run different images (%s): set them to one image, "+
			"which rollgate then records as the one a rollback returns to", strings.Join(runs, ", "))
	}
	if rendered == "" {
		rendered = current
	}
	return RunningIn(cs, rendered), ""
}

// mixed reports whether the containers run more than one image. An image an admission webhook
// pinned by digest is the image of its tag.
func mixed(cs []Container) bool {
	for _, c := range cs[1:] {
		if !image.Renders(c.Image, cs[0].Image) && !image.Renders(cs[0].Image, c.Image) {
			return true
		}
	}
	return false
}

// RunningIn is the container whose image says what the workload runs, measured against img (what
// rollgate rendered, or is about to): the first whose image is not img, else the first. The
// containers of one config run one image, so one that differs was changed by another hand, and the
// workload runs that until rollgate renders img into it again.
func RunningIn(cs []Container, img string) Container {
	for _, c := range cs {
		if !image.Renders(c.Image, img) {
			return c
		}
	}
	return cs[0]
}

package rollout

import (
	"fmt"
	"time"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/image"
)

// ImageRecheck is how often a version whose image the registry does not have, or could not tell
// of, is looked up again.
const ImageRecheck = time.Minute

// imageChecked is the image a rollout of tag starts with, once the registry has been asked when
// spec.checkImage or spec.pinDigest wants it: repo:tag, or repo:tag@digest to pin. It reports
// false when the rollout cannot start: the decision waits for the registry's answer
// (ImageLookUp), or the answer holds the version.
func imageChecked(d *Decision, in Input, tag string) (string, bool) {
	spec := in.Config.Spec
	img := spec.Image + ":" + tag
	if !spec.CheckImage && !spec.PinDigest {
		return img, true
	}
	l := in.Image
	if l == nil || l.Image != img {
		d.need(ImageLookUp{Image: img})
		return "", false
	}
	st := &d.Status
	switch {
	case l.NotFound:
		st.Phase, st.TargetVersion, st.NextWindow = v1alpha1.PhasePending, tag, nil
		msg := Bounded(fmt.Sprintf("%s is not in its registry (%s): %s waits, and is looked up again every %s", img, checkedBy(spec), tag, ImageRecheck))
		d.waiting(v1alpha1.ReasonImageNotFound, "%s", msg)
		d.holdBy(v1alpha1.GateImage, v1alpha1.ReasonImageNotFound, msg, time.Time{}, nil)
	case l.Problem != "" || l.Digest == "":
		st.Phase, st.TargetVersion, st.NextWindow = v1alpha1.PhasePending, tag, nil
		d.waiting(v1alpha1.EventRegistryUnavailable, "looking up %s in its registry (%s): %s; %s waits", img, checkedBy(spec), orNone(l.Problem), tag)
	case spec.PinDigest && image.Digest(img) == "": // a followed tag's version names its digest
		return img + "@" + l.Digest, true
	default:
		return img, true
	}
	d.RequeueAfter = ImageRecheck
	return "", false
}

// checkedBy names the field that asks for the look-up.
func checkedBy(spec v1alpha1.RollingUpgradeConfigSpec) string {
	if spec.PinDigest {
		return "spec.pinDigest"
	}
	return "spec.checkImage"
}

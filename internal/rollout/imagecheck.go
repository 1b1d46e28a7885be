package rollout

import (
	"cmp"
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
	if !spec.CheckImage && !pins(spec) {
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
	case pins(spec) && image.Digest(img) == "": // a followed tag's version names its digest
		return img + "@" + l.Digest, true
	default:
		return img, true
	}
	d.RequeueAfter = ImageRecheck
	return "", false
}

// pins: the version is rendered by the digest the registry resolved (spec.pinDigest, and
// spec.verify, whose check is of that digest).
func pins(spec v1alpha1.RollingUpgradeConfigSpec) bool { return spec.PinDigest || spec.Verify != nil }

// checkedBy names the field that asks for the look-up.
func checkedBy(spec v1alpha1.RollingUpgradeConfigSpec) string {
	switch {
	case spec.Verify != nil:
		return "spec.verify"
	case spec.PinDigest:
		return "spec.pinDigest"
	}
	return "spec.checkImage"
}

// signed: spec.verify holds a version whose image (c.image, pinned by its digest) carries no
// signature by the key, or cannot be checked now; it is checked again every ImageRecheck.
func signed(d *Decision, c *chosen) bool {
	v := c.in.Config.Spec.Verify
	switch {
	case v == nil:
		return true
	case v.Cosign == nil: // the API server requires it: a config written around it checks nothing
		d.rest()
		d.stalled(v1alpha1.EventInvalidSpec, "spec.verify names no check: set spec.verify.cosign")
		return false
	}
	a := c.in.Signature
	if a == nil || a.Image != c.image {
		d.need(SignatureCheck{Image: c.image})
		return false
	}
	if a.Signed {
		return true
	}
	st := &d.Status
	st.Phase, st.TargetVersion, st.NextWindow = v1alpha1.PhasePending, c.tag, nil
	key := v.Cosign.PublicKeySecretRef
	if a.Problem != "" {
		d.waiting(v1alpha1.EventRegistryUnavailable, "checking the signatures of %s (spec.verify): %s; %s waits", c.image, a.Problem, c.tag)
	} else {
		msg := Bounded(fmt.Sprintf("%s is not signed by the key in Secret %s (%s): %s; %s is never rendered unsigned, and is checked again every %s",
			c.image, key.Name, cmp.Or(key.Key, v1alpha1.DefaultPublicKeyKey), a.Unsigned, c.tag, ImageRecheck))
		d.waiting(v1alpha1.ReasonUnsigned, "%s", msg)
		d.holdBy(v1alpha1.GateImage, v1alpha1.ReasonUnsigned, msg, time.Time{}, nil)
	}
	d.RequeueAfter = ImageRecheck
	return false
}

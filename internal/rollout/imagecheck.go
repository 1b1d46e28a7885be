package rollout

import (
	"cmp"
	"fmt"
	"regexp"
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
	case v.Cosign.Keyless == nil && v.Cosign.PublicKeySecretRef == nil: // likewise
		d.rest()
		d.stalled(v1alpha1.EventInvalidSpec, "spec.verify.cosign names no signer: set publicKeySecretRef or keyless")
		return false
	case v.Cosign.Keyless != nil && v.Cosign.Keyless.SubjectRegExp != "":
		if _, err := regexp.Compile(v.Cosign.Keyless.SubjectRegExp); err != nil {
			d.rest()
			d.stalled(v1alpha1.EventInvalidSpec, "spec.verify.cosign.keyless.subjectRegExp: %v", err)
			return false
		}
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
	if a.Problem != "" {
		d.waiting(v1alpha1.EventRegistryUnavailable, "checking the signatures of %s (spec.verify): %s; %s waits", c.image, a.Problem, c.tag)
	} else {
		msg := Bounded(fmt.Sprintf("%s is not signed by %s: %s; %s is never rendered unsigned, and is checked again every %s",
			c.image, signer(v.Cosign), a.Unsigned, c.tag, ImageRecheck))
		d.waiting(v1alpha1.ReasonUnsigned, "%s", msg)
		d.holdBy(v1alpha1.GateImage, v1alpha1.ReasonUnsigned, msg, time.Time{}, nil)
	}
	d.RequeueAfter = ImageRecheck
	return false
}

// signer names who spec.verify.cosign accepts a signature by.
func signer(c *v1alpha1.CosignVerify) string {
	switch k := c.Keyless; {
	case k != nil && k.SubjectRegExp != "":
		return fmt.Sprintf("a subject matching %s of %s (spec.verify.cosign.keyless)", k.SubjectRegExp, k.Issuer)
	case k != nil:
		return fmt.Sprintf("%s of %s (spec.verify.cosign.keyless)", k.Subject, k.Issuer)
	case c.PublicKeySecretRef != nil:
		return fmt.Sprintf("the key in Secret %s (%s)", c.PublicKeySecretRef.Name, cmp.Or(c.PublicKeySecretRef.Key, v1alpha1.DefaultPublicKeyKey))
	}
	return "nobody"
}

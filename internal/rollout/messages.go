package rollout

import (
	"fmt"
	"strings"

	"github.com/rollgate/rollgate/internal/text"
)

// maxMessage bounds a condition or event message. A condition message may hold 32 KiB and an event
// note 1 KiB; a status with a few long messages can outgrow what the API server accepts, after
// which every status write fails. A message is for a person: its first kilobyte says enough.
const maxMessage = 1024

// Bounded cuts a message to maxMessage bytes, on a rune boundary, marking the cut.
func Bounded(msg string) string {
	return text.Cut(msg, maxMessage, " …")
}

// maxListed bounds the bytes a list of items takes in a message (see listed).
const maxListed = 400

// listed joins items with ", " until they would take more than maxListed bytes, and says how many
// it left out: "a, b, c and 742 more". A registry with thousands of CI tags stays one readable line.
func listed(items []string) string {
	var b strings.Builder
	for i, it := range items {
		if i > 0 && b.Len()+len(it) > maxListed {
			fmt.Fprintf(&b, " and %d more", len(items)-i)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(it)
	}
	return b.String()
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func availableNote(tag string) string {
	if tag == "" {
		return ""
	}
	return "; " + tag + " is available but not applied"
}

package writeback

import (
	"fmt"
	"path"
	"strings"
)

// AllowedPaths are the paths of a repository that a credential may write for the configs of one
// namespace: its Secret's allowedPaths, set by the admin who owns the credential. A GitWriteBack
// and its configs are their namespace's to edit; without this, a tenant could have the manager
// write another team's files with a credential shared by both.
type AllowedPaths []string

// ParseAllowedPaths reads allowedPaths: entries separated by new lines or commas, each a directory
// ending in "/" (everything under it), a file, or a path.Match pattern (a "*" stays within one
// directory). Given (the key is in the Secret) but empty, it allows no path; nil (not given)
// allows every path.
func ParseAllowedPaths(s string, given bool) AllowedPaths {
	if !given {
		return nil
	}
	out := AllowedPaths{}
	for _, e := range strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == ',' }) {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, strings.TrimPrefix(e, "/"))
		}
	}
	return out
}

// Allows reports whether p may be written.
func (a AllowedPaths) Allows(p string) bool {
	if a == nil {
		return true
	}
	p = path.Clean(p)
	for _, e := range a {
		if strings.HasSuffix(e, "/") && strings.HasPrefix(p, e) {
			return true
		}
		if ok, err := path.Match(e, p); ok && err == nil {
			return true
		}
	}
	return false
}

// Refused is the first of d's paths (the workload's file, the record, the preset) that a does not
// allow, or "".
func (a AllowedPaths) Refused(d Desired) string {
	for _, p := range []string{d.Path, d.RecordPath, d.PresetPath} {
		if p != "" && !a.Allows(p) {
			return p
		}
	}
	return ""
}

// RefusedError says that p is not among the paths of the credential's Secret.
func RefusedError(p, secret string, a AllowedPaths) error {
	return fmt.Errorf("%s is not among the paths Secret %q allows (allowedPaths: %s): ask the admin who owns the credential", p, secret, strings.Join(a, ", "))
}

// Package buildinfo says which build of rollgate runs: its version, the commit it was built from,
// that commit's date and the Go release. The Makefile stamps the first three at link time
// (-ldflags -X, from git describe); a binary built without that says "dev".
package buildinfo

import (
	"fmt"
	"runtime"
)

// Stamped at link time: -X github.com/rollgate/rollgate/internal/buildinfo.version=v0.1.0, and so on.
var (
	version = "dev"
	commit  = ""
	date    = ""
)

// Info is what a build says of itself.
type Info struct {
	// Version is the release (v0.1.0), or what git describe says of a commit after it
	// (v0.1.0-3-gabc1234, -dirty with uncommitted changes); "dev" unstamped.
	Version string
	// Commit is the full hash built from, and Date its commit time (RFC 3339): a build of the same
	// commit says the same, so builds stay reproducible. Empty unstamped.
	Commit, Date string
	// Go is the Go release that built it.
	Go string
}

// Get is this binary's Info.
func Get() Info {
	return Info{Version: version, Commit: commit, Date: date, Go: runtime.Version()}
}

// String is the line `rollgate version` prints.
func (i Info) String() string {
	s := "rollgate " + i.Version
	if i.Commit != "" {
		s += fmt.Sprintf(" (commit %s, %s)", i.Commit, i.Date)
	}
	return s + ", built with " + i.Go
}

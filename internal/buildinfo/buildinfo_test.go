package buildinfo

import (
	"runtime"
	"testing"
)

func TestInfoString(t *testing.T) {
	for _, tc := range []struct {
		info Info
		want string
	}{
		{Info{Version: "dev", Go: "go1.27.3"}, "rollgate dev, built with go1.27.3"},
		{Info{Version: "v0.1.0", Commit: "0123abc", Date: "2026-12-02T06:00:00Z", Go: "go1.27.3"},
			"rollgate v0.1.0 (commit 0123abc, 2026-12-02T06:00:00Z), built with go1.27.3"},
	} {
		if got := tc.info.String(); got != tc.want {
			t.Errorf("%q, want %q", got, tc.want)
		}
	}
}

// A test binary is not stamped: it says dev, with the Go release that built it.
func TestAnUnstampedBuildSaysDev(t *testing.T) {
	if i := Get(); i.Version != "dev" || i.Commit != "" || i.Go != runtime.Version() {
		t.Errorf("unstamped: %+v", i)
	}
}

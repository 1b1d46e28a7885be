package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestVersionFlag(t *testing.T) {
	if _, err := parseOptions([]string{"--version"}); !errors.Is(err, errVersion) {
		t.Errorf("--version: %v", err)
	}
}

// The Makefile's stamp reaches the binary: built with its -X flags, `rollgate version` and
// `rollgate --version` say the version, the commit and its date.
func TestABuildIsStampedWithItsVersion(t *testing.T) {
	out, err := exec.Command("make", "-s", "-C", "../..", "print-ldflags", "VERSION=v9.9.9", "COMMIT=0123abc", "COMMIT_DATE=2026-12-02T06:00:00Z").Output()
	if err != nil {
		t.Fatalf("make print-ldflags: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "rollgate")
	// As `make build` builds (its packages are compiled already): only the link differs.
	build := exec.Command("go", "build", "-trimpath", "-ldflags", strings.TrimSpace(string(out)), "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	want := "rollgate v9.9.9 (commit 0123abc, 2026-12-02T06:00:00Z), built with " + runtime.Version() + "\n"
	for _, args := range [][]string{{"version"}, {"--version"}} {
		got, err := exec.Command(bin, args...).Output()
		if err != nil || string(got) != want {
			t.Errorf("rollgate %s: %q, %v; want %q", args[0], got, err, want)
		}
	}
}

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// image-push.sh signs the index and attests each platform's SBOM to its image and to the index,
// for every platform the push names, and leaves its own input to cosign, which reads an encrypted
// key's password from it when COSIGN_PASSWORD is not set. The push and cosign are stand-ins here:
// the e2e suite runs the real ones against a registry.
func TestImagePushGivesCosignItsInputForEveryPlatform(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	log := filepath.Join(dir, "cosign.log")
	write := func(path, script string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte("#!/usr/bin/env bash\n"+script), 0o755); err != nil { //nolint:gosec // a stand-in the test runs
			t.Fatal(err)
		}
	}
	// `go run ./hack/image push` prints what it pushed.
	write(filepath.Join(bin, "go"), "printf 'index r/app@sha256:i\\nlinux/amd64 r/app@sha256:a\\nlinux/arm64 r/app@sha256:b\\n'\n")
	// cosign asks for the password on its input, as it does without COSIGN_PASSWORD.
	write(filepath.Join(dir, "cosign"), `read -r password || password="(none)"; echo "$1 ${@: -1} password=$password" >>"$LOG"`+"\n")

	cmd := exec.Command("bash", "../image-push.sh", "r/app:1.0.0")
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "IMAGE_DIR="+dir, "COSIGN="+filepath.Join(dir, "cosign"),
		"COSIGN_KEY=cosign.key", "COSIGN_SIGN_FLAGS=", "LOG="+log)
	cmd.Stdin = strings.NewReader(strings.Repeat("hunter2\n", 10))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("image-push.sh: %v\n%s", err, out)
	}
	got, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	want := "sign r/app@sha256:i password=hunter2\n" +
		"attest r/app@sha256:a password=hunter2\nattest r/app@sha256:i password=hunter2\n" +
		"attest r/app@sha256:b password=hunter2\nattest r/app@sha256:i password=hunter2\n"
	if string(got) != want {
		t.Errorf("cosign was run as:\n%s\nwant:\n%s", got, want)
	}
}

package image

import (
	"strings"
	"testing"
)

var digest = "sha256:" + strings.Repeat("ab", 32)

func TestSameRepository(t *testing.T) {
	cases := []struct {
		image, repo string
		want        bool
	}{
		{"ghcr.io/acme/web:1.4.0", "ghcr.io/acme/web", true},
		{"ghcr.io/acme/web@" + digest, "ghcr.io/acme/web", true},
		{"nginx:1.27", "docker.io/library/nginx", true},
		{"docker.io/library/nginx:1.27", "nginx", true},
		{"127.0.0.1:5000/demo/app:1.0.0", "127.0.0.1:5000/demo/app", true},
		{"ghcr.io/acme/web-sidecar:1.4.0", "ghcr.io/acme/web", false},
		{"ghcr.io/other/web:1.4.0", "ghcr.io/acme/web", false},
		{"not a reference", "ghcr.io/acme/web", false},
		{"ghcr.io/acme/web:1.0", "ghcr.io/acme/web:1.0", false},
	}
	for _, tc := range cases {
		if got := SameRepository(tc.image, tc.repo); got != tc.want {
			t.Errorf("SameRepository(%q, %q) = %v", tc.image, tc.repo, got)
		}
	}
}

func TestTagAndVersion(t *testing.T) {
	cases := []struct{ image, tag, version string }{
		{"ghcr.io/acme/web:1.4.0", "1.4.0", "1.4.0"},
		{"127.0.0.1:5000/demo/app:v2.0.0", "v2.0.0", "v2.0.0"},
		{"127.0.0.1:5000/demo/app", "", ""},
		{"nginx", "", ""},
		{"ghcr.io/acme/web@" + digest, "", digest},
		{"ghcr.io/acme/web:1.4.0@" + digest, "1.4.0", "1.4.0"},
	}
	for _, tc := range cases {
		if got := Tag(tc.image); got != tc.tag {
			t.Errorf("Tag(%q) = %q, want %q", tc.image, got, tc.tag)
		}
		if got := Version(tc.image); got != tc.version {
			t.Errorf("Version(%q) = %q, want %q", tc.image, got, tc.version)
		}
	}
	if !DigestPinned("ghcr.io/acme/web@"+digest) || DigestPinned("ghcr.io/acme/web:1.4.0") {
		t.Error("DigestPinned")
	}
}

func TestSameRepositoryName(t *testing.T) {
	if !SameRepositoryName("nginx", "docker.io/library/nginx") || SameRepositoryName("ghcr.io/acme/web", "ghcr.io/acme/api") ||
		SameRepositoryName("ghcr.io/acme/web:1", "ghcr.io/acme/web") {
		t.Error("SameRepositoryName")
	}
}

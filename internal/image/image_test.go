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
		{"ghcr.io/acme/web:.x", "ghcr.io/acme/web", false}, // found by FuzzReferences: no registry stores such a tag
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
		{"0:.", "", ""}, // found by FuzzReferences
	}
	for _, tc := range cases {
		if got := Tag(tc.image); got != tc.tag {
			t.Errorf("Tag(%q) = %q, want %q", tc.image, got, tc.tag)
		}
		if got := Version(tc.image); got != tc.version {
			t.Errorf("Version(%q) = %q, want %q", tc.image, got, tc.version)
		}
	}
}

func TestSameRepositoryName(t *testing.T) {
	if !SameRepositoryName("nginx", "docker.io/library/nginx") || SameRepositoryName("ghcr.io/acme/web", "ghcr.io/acme/api") ||
		SameRepositoryName("ghcr.io/acme/web:1", "ghcr.io/acme/web") {
		t.Error("SameRepositoryName")
	}
}

func TestRenders(t *testing.T) {
	other := "sha256:" + strings.Repeat("cd", 32)
	cases := []struct {
		name          string
		image, target string
		want          bool
	}{
		{name: "the same string", image: "ghcr.io/acme/web:1.1.0", target: "ghcr.io/acme/web:1.1.0", want: true},
		{name: "a digest added by an admission webhook still runs the tag", image: "ghcr.io/acme/web:1.1.0@" + digest, target: "ghcr.io/acme/web:1.1.0", want: true},
		{name: "another tag does not", image: "ghcr.io/acme/web:1.0.0@" + digest, target: "ghcr.io/acme/web:1.1.0", want: false},
		{name: "a digest alone does not run a tag", image: "ghcr.io/acme/web@" + digest, target: "ghcr.io/acme/web:1.1.0", want: false},
		{name: "a normalised name is the same repository", image: "docker.io/library/nginx:1.27", target: "nginx:1.27", want: true},
		{name: "another repository with the same tag does not", image: "ghcr.io/acme/api:1.1.0", target: "ghcr.io/acme/web:1.1.0", want: false},
		{name: "a digest target is run by its digest", image: "ghcr.io/acme/web@" + digest, target: "ghcr.io/acme/web@" + digest, want: true},
		{name: "a digest target is run by its digest under a tag", image: "ghcr.io/acme/web:1.1.0@" + digest, target: "ghcr.io/acme/web@" + digest, want: true},
		{name: "a digest target is not run by another digest", image: "ghcr.io/acme/web:1.1.0@" + other, target: "ghcr.io/acme/web:1.1.0@" + digest, want: false},
		{name: "a digest target is not run by its tag alone", image: "ghcr.io/acme/web:1.1.0", target: "ghcr.io/acme/web:1.1.0@" + digest, want: false},
		{name: "a tagged digest target is not run by the digest under another tag", image: "ghcr.io/acme/web:1.0.0@" + digest, target: "ghcr.io/acme/web:1.1.0@" + digest, want: false},
		{name: "garbage runs nothing", image: "not a reference", target: "ghcr.io/acme/web:1.1.0", want: false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Renders(tc.image, tc.target); got != tc.want {
				t.Errorf("Renders(%q, %q) = %v, want %v", tc.image, tc.target, got, tc.want)
			}
		})
	}
}

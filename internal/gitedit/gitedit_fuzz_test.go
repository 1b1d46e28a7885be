package gitedit

import (
	"os"
	"path/filepath"
	"testing"

	yaml "go.yaml.in/yaml/v3"

	"github.com/rollgate/rollgate/internal/image"
)

// FuzzSetKustomizeImage: whatever the kustomization, an edit either is refused or leaves YAML in
// which the image's entry, read by a YAML parser, has the new tag.
func FuzzSetKustomizeImage(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/kustomize/*.yaml")
	for _, s := range seeds {
		b, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, "1.3.0")
	}
	f.Add([]byte("images:\n- name: ghcr.io/acme/web\n  newTag: 1.9\n"), "1.10")
	f.Fuzz(func(t *testing.T, src []byte, tag string) {
		if !image.IsTag(tag) {
			return
		}
		out, err := SetKustomizeImage(src, "ghcr.io/acme/web", tag)
		if err != nil {
			return
		}
		var k struct {
			Images []struct {
				Name    string `yaml:"name"`
				NewName string `yaml:"newName"`
				NewTag  string `yaml:"newTag"`
			} `yaml:"images"`
		}
		if err := yaml.Unmarshal(out, &k); err != nil {
			t.Fatalf("the edit left a file that is not a kustomization: %v\n%s", err, out)
		}
		for _, e := range k.Images {
			if repo := e.NewName; repo == "ghcr.io/acme/web" || repo == "" && e.Name == "ghcr.io/acme/web" {
				if e.NewTag != tag {
					t.Fatalf("the entry's newTag reads %q, want %q\n%s", e.NewTag, tag, out)
				}
				return
			}
		}
		t.Fatalf("no entry for the image after the edit\n%s", out)
	})
}

package writeback

import "testing"

func TestAllowedPaths(t *testing.T) {
	a := ParseAllowedPaths("apps/shop/\n .rollgate/shop/*.yaml ,/.rollgate/renovate.json\n\n", true)
	for p, want := range map[string]bool{
		"apps/shop/web/kustomization.yaml": true,
		"apps/shop":                        false, // the directory itself is no file under it
		"apps/shopping/kustomization.yaml": false,
		"apps/other/kustomization.yaml":    false,
		".rollgate/shop/web.yaml":          true,
		".rollgate/shop/deep/web.yaml":     false, // a "*" stays within one directory
		".rollgate/other/web.yaml":         false,
		".rollgate/renovate.json":          true,
		"apps/shop/../other/x.yaml":        false,
	} {
		if got := a.Allows(p); got != want {
			t.Errorf("%s: allowed %v, want %v", p, got, want)
		}
	}
	if none := ParseAllowedPaths("", false); none != nil || !none.Allows("anything/at/all.yaml") {
		t.Errorf("no allowedPaths: %v, want every path allowed", none)
	}
	if empty := ParseAllowedPaths(" \n, ", true); empty.Allows("apps/shop/web.yaml") {
		t.Error("an empty allowedPaths allows a path")
	}
	d := Desired{Path: "apps/shop/web.yaml", RecordPath: ".rollgate/other/web.yaml", PresetPath: ".rollgate/renovate.json"}
	if got := a.Refused(d); got != ".rollgate/other/web.yaml" {
		t.Errorf("refused %q, want the record's path", got)
	}
}

package gitedit

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// golden reads a test's input and the file the edit must make of it.
func golden(t *testing.T, path string) (in, want []byte) {
	t.Helper()
	in, err := os.ReadFile(filepath.Join("testdata", path+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	want, err = os.ReadFile(filepath.Join("testdata", path+".golden"))
	if err != nil {
		t.Fatal(err)
	}
	return in, want
}

func TestSetKustomizeImage(t *testing.T) {
	for _, file := range []string{
		"hand-written", // comments, odd spacing, blank lines and other entries stay
		"new-name",     // the entry that renames an image to the repository is the one
		"no-new-tag",   // a newTag is added under the entry's last field
		"no-entry",     // an entry is added at the end of the list, indented as the others
		"no-images",    // a list is added at the end of a file without a final newline
		"empty-images", // images: with nothing under it
		"flow-entry",   // - {name: ..., newTag: ...}
	} {
		t.Run(file, func(t *testing.T) {
			in, want := golden(t, "kustomize/"+file)
			got, err := SetKustomizeImage(in, "ghcr.io/acme/web", "1.3.0")
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("got\n%s\nwant\n%s", got, want)
			}
			// Set again, the file is already right: not one byte changes.
			again, err := SetKustomizeImage(got, "ghcr.io/acme/web", "1.3.0")
			if err != nil || !bytes.Equal(again, got) {
				t.Errorf("setting the same tag again changed the file (err %v):\n%s", err, again)
			}
		})
	}
}

func TestSetKustomizeImageCases(t *testing.T) {
	for _, tc := range []struct {
		name, in, image, tag, want, err string
	}{
		{name: "repositories compare by their full name",
			in: "images:\n- name: nginx\n  newTag: 1.27.0\n", image: "docker.io/library/nginx", tag: "1.27.1",
			want: "images:\n- name: nginx\n  newTag: 1.27.1\n"},
		{name: "a tag YAML would read as a number is quoted",
			in: "images:\n- name: ghcr.io/acme/web\n  newTag: 1.9\n", image: "ghcr.io/acme/web", tag: "1.10",
			want: "images:\n- name: ghcr.io/acme/web\n  newTag: \"1.10\"\n"},
		{name: "a double-quoted tag stays double-quoted",
			in: "images:\n- name: ghcr.io/acme/web\n  newTag: \"1.9\" # x\n", image: "ghcr.io/acme/web", tag: "1.10",
			want: "images:\n- name: ghcr.io/acme/web\n  newTag: \"1.10\" # x\n"},
		{name: "CRLF line ends stay",
			in: "images:\r\n- name: ghcr.io/acme/web\r\n  newTag: 1.2.0\r\n", image: "ghcr.io/acme/web", tag: "1.3.0",
			want: "images:\r\n- name: ghcr.io/acme/web\r\n  newTag: 1.3.0\r\n"},
		{name: "a comment with other scripts before the value",
			in: "images: # für die Produktion\n- name: ghcr.io/acme/web # 網站\n  newTag: 1.2.0 # 版本\n", image: "ghcr.io/acme/web", tag: "1.3.0",
			want: "images: # für die Produktion\n- name: ghcr.io/acme/web # 網站\n  newTag: 1.3.0 # 版本\n"},
		{name: "an empty file", in: "", image: "ghcr.io/acme/web", tag: "1.3.0",
			want: "images:\n- name: ghcr.io/acme/web\n  newTag: 1.3.0\n"},
		{name: "an entry that pins a digest is refused",
			in: "images:\n- name: ghcr.io/acme/web\n  digest: sha256:0000\n", image: "ghcr.io/acme/web", tag: "1.3.0",
			err: "pins a digest"},
		{name: "images written [...] is refused",
			in: "images: [{name: ghcr.io/acme/api, newTag: 1.0.0}]\n", image: "ghcr.io/acme/web", tag: "1.3.0",
			err: "not a block list"},
		{name: "a {...} entry without newTag is refused",
			in: "images:\n- {name: ghcr.io/acme/web}\n", image: "ghcr.io/acme/web", tag: "1.3.0",
			err: "has no newTag"},
		{name: "a list is not a kustomization", in: "- a\n- b\n", image: "ghcr.io/acme/web", tag: "1.3.0",
			err: "not a mapping"},
		{name: "not YAML", in: "images: [\n", image: "ghcr.io/acme/web", tag: "1.3.0", err: "not YAML"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := SetKustomizeImage([]byte(tc.in), tc.image, tc.tag)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("got\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

func TestSetMarked(t *testing.T) {
	for _, tc := range []struct {
		file   string
		marked int
	}{
		{"deployment", 3}, // a full reference (its digest goes with the old tag), a tag, and another config's line left alone
		{"values", 2},     // Helm values: the tag apart, and a list item
	} {
		t.Run(tc.file, func(t *testing.T) {
			in, want := golden(t, "marked/"+tc.file)
			got, n, err := SetMarked(in, Marker("shop", "web"), "ghcr.io/acme/web", "1.3.0")
			if err != nil {
				t.Fatal(err)
			}
			if n != tc.marked {
				t.Errorf("%d lines marked, want %d", n, tc.marked)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("got\n%s\nwant\n%s", got, want)
			}
		})
	}
}

func TestSetMarkedCases(t *testing.T) {
	for _, tc := range []struct {
		name, in, want, err string
		marked              int
	}{
		{name: "no line marked for the config: the file as it was",
			in: "image: ghcr.io/acme/web:1.2.0 # {\"$rollgate\": \"other:web\"}\n", want: "image: ghcr.io/acme/web:1.2.0 # {\"$rollgate\": \"other:web\"}\n"},
		{name: "a tag YAML would read as a number is quoted",
			in: "tag: 1.9 # {\"$rollgate\": \"shop:web:tag\"}", want: "tag: \"1.10\" # {\"$rollgate\": \"shop:web:tag\"}", marked: 1},
		{name: "a single-quoted value with a quote inside",
			in: "note: 'it''s 1.9' # {\"$rollgate\": \"shop:web:tag\"}\n", want: "note: '1.10' # {\"$rollgate\": \"shop:web:tag\"}\n", marked: 1},
		{name: "a marker on a line of its own is refused",
			in: "# {\"$rollgate\": \"shop:web\"}\nimage: x\n", err: "line 1: the marker comment follows no value"},
		{name: "a marker after a key with no value is refused",
			in: "image: # {\"$rollgate\": \"shop:web\"}\n", err: "does not follow a field's value"},
		{name: "an edit that would break the YAML is refused", // the value ends at the comment: its comma would go
			in: "a: {\n  b: c, # {\"$rollgate\": \"shop:web:tag\"}\n  d: e\n}\n", err: "not YAML"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, n, err := SetMarked([]byte(tc.in), Marker("shop", "web"), "ghcr.io/acme/web", "1.10")
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want || n != tc.marked {
				t.Errorf("got %d lines marked and\n%q\nwant %d and\n%q", n, got, tc.marked, tc.want)
			}
		})
	}
}

func TestRenovatePreset(t *testing.T) {
	want, err := os.ReadFile("testdata/preset.golden")
	if err != nil {
		t.Fatal(err)
	}
	got := RenovatePreset(map[string][]string{
		"ghcr.io/acme/web": {"1.3.1", "1.2.0", "1.3.1"}, // two configs failed 1.3.1: one rule, listed once
		"ghcr.io/acme/api": {"2.0.0-rc.1+build.7"},
		"ghcr.io/acme/ok":  nil, // nothing failed: no rule
	})
	if !bytes.Equal(got, want) {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if empty := string(RenovatePreset(nil)); !strings.Contains(empty, `"packageRules": []`) {
		t.Errorf("with nothing failed the preset must still be a preset with no rules:\n%s", empty)
	}
}

func TestRecordRoundTrip(t *testing.T) {
	r := Record{Config: "shop/web", Image: "ghcr.io/acme/web", CurrentVersion: "1.3.0", FailedVersions: []string{"1.4.0", "1.2.0", "1.4.0"}}
	b := r.Marshal()
	if !strings.HasPrefix(string(b), "# What rollgate knows") || !strings.Contains(string(b), "failedVersions:\n- 1.2.0\n- 1.4.0\n") {
		t.Errorf("record file:\n%s", b)
	}
	back, err := ParseRecord(b)
	if err != nil {
		t.Fatal(err)
	}
	if back.Config != r.Config || back.Image != r.Image || back.CurrentVersion != r.CurrentVersion ||
		strings.Join(back.FailedVersions, ",") != "1.2.0,1.4.0" {
		t.Errorf("read back %+v", back)
	}
	if !bytes.Equal(back.Marshal(), b) {
		t.Error("the same record gave other bytes")
	}
	for _, bad := range []string{"config: shop/web\n", "config: shop/web\nimage: x\nversion: 1\n", "[1, 2]\n"} {
		if _, err := ParseRecord([]byte(bad)); err == nil {
			t.Errorf("%q read as a record", bad)
		}
	}
	failed := FailedByImage([]Record{back, {Config: "staging/web", Image: "ghcr.io/acme/web", FailedVersions: []string{"1.5.0"}}})
	if got := strings.Join(failed["ghcr.io/acme/web"], ","); got != "1.2.0,1.4.0,1.5.0" {
		t.Errorf("failed versions of the image: %s", got)
	}
}

package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// The image is built from what the Dockerfile copies: every package of this module that the manager
// imports must be under one of its COPY lines, or `docker build` fails.
func TestDockerfileCopiesEveryPackageTheManagerImports(t *testing.T) {
	dockerfile, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	var copied []string
	for _, line := range strings.Split(string(dockerfile), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "COPY" && strings.HasSuffix(f[1], "/") {
			copied = append(copied, f[1])
		}
	}
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if .Module}}{{if .Module.Main}}{{.Dir}}{{end}}{{end}}", ".").Output()
	if err != nil {
		t.Fatal(err)
	}
	root, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range strings.Fields(string(out)) {
		rel := strings.TrimPrefix(dir, strings.TrimSpace(string(root))+"/") + "/"
		found := false
		for _, c := range copied {
			found = found || strings.HasPrefix(rel, c)
		}
		if !found {
			t.Errorf("the manager imports %s, which the Dockerfile does not copy (it copies %v)", rel, copied)
		}
	}
}

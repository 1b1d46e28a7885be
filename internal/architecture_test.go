// Package internal_test holds the test that keeps the code to the rules of docs/architecture.md.
package internal_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/rollgate/rollgate/"

// doesIO are the imports (and the packages under them) that talk to the world: a package that
// decides imports none of them.
var doesIO = []string{
	"net", "net/http", "os/exec",
	"k8s.io/client-go", "sigs.k8s.io/controller-runtime",
	"github.com/go-git/go-git/v5", "github.com/google/go-containerregistry/pkg/v1/remote",
	"github.com/prometheus/client_golang/api",
}

// rule is what docs/architecture.md says of one package.
type rule struct {
	decides   bool
	mayImport []string
}

// readRules reads the "### `pkg`" sections of the page: whether each decides, and what it may
// import.
func readRules(t *testing.T, page []byte) map[string]*rule {
	t.Helper()
	heading := regexp.MustCompile("^### (.*)$")
	quoted := regexp.MustCompile("`([^`]+)`")
	rules := map[string]*rule{}
	var current []*rule
	inMayImport := false
	sc := bufio.NewScanner(bytes.NewReader(page))
	for sc.Scan() {
		line := sc.Text()
		if m := heading.FindStringSubmatch(line); m != nil {
			current = nil
			for _, q := range quoted.FindAllStringSubmatch(m[1], -1) {
				r := &rule{}
				rules[q[1]] = r
				current = append(current, r)
			}
			inMayImport = false
			continue
		}
		for _, r := range current {
			if strings.HasPrefix(line, "*Decides.*") {
				r.decides = true
			}
		}
		switch {
		case strings.HasPrefix(line, "May import:"):
			inMayImport = true
		case line == "":
			inMayImport = false
		}
		if inMayImport {
			for _, q := range quoted.FindAllStringSubmatch(line, -1) {
				for _, r := range current {
					r.mayImport = append(r.mayImport, q[1])
				}
			}
		}
	}
	return rules
}

type goPackage struct {
	ImportPath string
	Imports    []string
}

// TestPackagesKeepToTheArchitecture: every package of the module is on docs/architecture.md,
// imports only the packages of the module its section allows, and a package that decides imports
// nothing that does I/O.
func TestPackagesKeepToTheArchitecture(t *testing.T) {
	page, err := os.ReadFile("../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	rules := readRules(t, page)
	if len(rules) < 10 {
		t.Fatalf("read %d package sections from docs/architecture.md; its headings are \"### `path`\"", len(rules))
	}
	out, err := exec.Command("go", "list", "-tags", "integration,e2e", "-json", "../...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	seen := map[string]bool{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p goPackage
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		path := strings.TrimPrefix(p.ImportPath, module)
		seen[path] = true
		r, ok := rules[path]
		if !ok {
			t.Errorf("package %s is not on docs/architecture.md: give it a section saying what it owns and may import", path)
			continue
		}
		for _, imp := range p.Imports {
			if own, ok := strings.CutPrefix(imp, module); ok && !slices.Contains(r.mayImport, own) {
				t.Errorf("%s imports %s, which docs/architecture.md does not allow it", path, own)
			}
			if r.decides && slices.ContainsFunc(doesIO, func(io string) bool { return imp == io || strings.HasPrefix(imp, io+"/") }) {
				t.Errorf("%s decides, yet imports %s, which does I/O", path, imp)
			}
		}
	}
	for path := range rules {
		if !seen[path] {
			t.Errorf("docs/architecture.md has a section for %s, which is not a package of the module", path)
		}
	}
}

// The page's rules are read as written: a section's "May import" line, its "Decides" mark, and
// several packages under one heading.
func TestReadRules(t *testing.T) {
	page := []byte("# x\n\n### `a/b`\n*Decides.* Owns b.\n\nMay import: `c`,\n`d`.\n\n### `e`, `f`\nOwns e.\n\nMay import: nothing.\n")
	rules := readRules(t, page)
	if r := rules["a/b"]; r == nil || !r.decides || !slices.Equal(r.mayImport, []string{"c", "d"}) {
		t.Errorf("a/b: %+v", r)
	}
	for _, p := range []string{"e", "f"} {
		if r := rules[p]; r == nil || r.decides || len(r.mayImport) != 0 {
			t.Errorf("%s: %+v", p, r)
		}
	}
}

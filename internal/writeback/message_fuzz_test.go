package writeback

import (
	"fmt"
	"runtime"
	"testing"
)

// maxFuzzAlloc bounds what one run of an accepted template may allocate on the largest data of
// the fuzz target: the manager runs it for every commit, under a memory limit shared by all.
const maxFuzzAlloc = 64 << 20

// FuzzMessageTemplate: whatever a tenant writes as a message template, one that is accepted runs
// on a commit of 1,000 configs with 100 failed versions each within maxSteps (or is not run), writes
// at most maxMessage bytes and allocates at most maxFuzzAlloc.
func FuzzMessageTemplate(f *testing.F) {
	for _, seed := range []string{
		DefaultMessageTemplate,
		"deploy:{{ range .Outcomes }} {{ .Name }}={{ .Version }}{{ end }}",
		`{{ range .Outcomes }}{{ range .FailedVersions }}{{ if eq . "x" }}{{ end }}{{ end }}{{ end }}`,
		`{{ with index .Outcomes 0 }}{{ range $i, $v := .FailedVersions }}{{ if gt $i 0 }},{{ end }}{{ $v }}{{ end }}{{ end }}`,
		`{{ range .Outcomes }}{{ printf "%999999d" 1 }}{{ end }}`,
		`{{ define "a" }}{{ template "a" . }}{{ template "a" . }}{{ end }}{{ template "a" . }}`,
		`{{ range .Outcomes }}{{ $o := . }}{{ with $o }}{{ range .FailedVersions }}{{ with $o }}{{ range .FailedVersions }}{{ end }}{{ end }}{{ end }}{{ end }}{{ end }}`,
	} {
		f.Add(seed)
	}
	big := MessageData{}
	for i := range 1000 {
		o := Outcome{Namespace: "shop", Name: fmt.Sprintf("web-%d", i), Image: "ghcr.io/acme/web", Version: "1.0.0",
			Result: "RolledBack", Tried: "2.0.0"}
		for j := range 100 {
			o.FailedVersions = append(o.FailedVersions, fmt.Sprintf("2.0.%d", j))
		}
		big.Outcomes = append(big.Outcomes, o)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if len(text) > 4096 { // the CRD's bound
			return
		}
		tmpl, err := ParseMessageTemplate(text)
		if err != nil {
			return
		}
		for _, data := range []MessageData{{}, {Outcomes: big.Outcomes[:1]}, big} {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			out, _ := execute(tmpl, data)
			runtime.ReadMemStats(&after)
			if len(out) > maxMessage {
				t.Errorf("%q on %d configs wrote %d bytes", text, len(data.Outcomes), len(out))
			}
			if n := after.TotalAlloc - before.TotalAlloc; n > maxFuzzAlloc {
				t.Errorf("%q on %d configs allocated %d MiB", text, len(data.Outcomes), n>>20)
			}
		}
	})
}

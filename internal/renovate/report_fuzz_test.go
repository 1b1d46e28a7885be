package renovate

import (
	"bytes"
	"os"
	"testing"
)

// FuzzParse: any file is either refused or read as a report whose dependencies can be listed.
func FuzzParse(f *testing.F) {
	if b, err := os.ReadFile("testdata/report.json"); err == nil {
		f.Add(b)
	}
	f.Add([]byte(`{"repositories":{"local":{"packageFiles":{}}}}`))
	f.Add([]byte(`{"repositories":{"x":{}}}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		rep, err := Parse(bytes.NewReader(data))
		if err != nil {
			return
		}
		_ = rep.Dependencies()
		_ = rep.AllProblems()
	})
}

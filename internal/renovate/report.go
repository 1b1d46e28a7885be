// Package renovate reads Renovate's JSON report (renovate --platform=local --report-type=file) and
// plans the ApplicationVersion changes it announces, so that Renovate can act as rollgate's version
// scanner without pull requests. The preset in this directory makes Renovate find rollgate's files.
package renovate

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"time"
)

// Report is the part of Renovate's report that rollgate reads.
type Report struct {
	Problems     []Problem             `json:"problems"`
	Repositories map[string]Repository `json:"repositories"`
}

// Problem is a problem Renovate reports about its run or a repository. Level is a bunyan log
// level: 40 warn, 50 error, 60 fatal.
type Problem struct {
	Level   int    `json:"level"`
	Message string `json:"msg"`
}

func (p Problem) String() string {
	level := map[int]string{30: "info", 40: "warn", 50: "error", 60: "fatal"}[p.Level]
	if level == "" {
		level = fmt.Sprintf("level %d", p.Level)
	}
	return level + ": " + p.Message
}

// Repository is one scanned repository.
type Repository struct {
	Problems     []Problem                `json:"problems"`
	PackageFiles map[string][]PackageFile `json:"packageFiles"` // by manager: regex, kubernetes, ...
}

// PackageFile is one file a manager found dependencies in.
type PackageFile struct {
	PackageFile string       `json:"packageFile"`
	Deps        []Dependency `json:"deps"`
}

// Dependency is one dependency with the updates Renovate found for it.
type Dependency struct {
	DepName      string   `json:"depName"`
	CurrentValue string   `json:"currentValue"`
	Datasource   string   `json:"datasource"`
	SkipReason   string   `json:"skipReason"`
	Updates      []Update `json:"updates"`

	// Filled in by Dependencies, not part of the report.
	Manager     string `json:"-"`
	PackageFile string `json:"-"`
}

// Update is one proposed new value.
type Update struct {
	NewValue   string `json:"newValue"`
	UpdateType string `json:"updateType"`
	// ReleaseTimestamp is when the datasource says the new value was released (ISO 8601), if
	// it says.
	ReleaseTimestamp string `json:"releaseTimestamp"`
}

// ReleasedAt is the update's release time; zero when the report has none it can read.
func (u Update) ReleasedAt() time.Time {
	t, err := time.Parse(time.RFC3339Nano, u.ReleaseTimestamp)
	if err != nil {
		return time.Time{}
	}
	return t
}

// Parse reads a report and rejects anything that does not have the report's shape, so that a wrong
// file changes nothing.
func Parse(r io.Reader) (*Report, error) {
	var raw map[string]json.RawMessage
	dec := json.NewDecoder(r)
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("not a Renovate JSON report: %w", err)
	}
	if _, ok := raw["repositories"]; !ok {
		return nil, errors.New(`not a Renovate JSON report: no "repositories" (write one with renovate --platform=local --report-type=file --report-path=FILE)`)
	}
	var rep Report
	if err := json.Unmarshal(mustJSON(raw), &rep); err != nil {
		return nil, fmt.Errorf("Renovate report of an unknown shape: %w", err)
	}
	for name, repo := range rep.Repositories {
		if repo.PackageFiles == nil {
			return nil, fmt.Errorf(`Renovate report of an unknown shape: repository %q has no "packageFiles"`, name)
		}
	}
	return &rep, nil
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// Dependencies lists the docker dependencies of every repository and manager, in a stable order,
// leaving out those Renovate skipped.
func (r *Report) Dependencies() []Dependency {
	var out []Dependency
	for _, repo := range sortedKeys(r.Repositories) {
		files := r.Repositories[repo].PackageFiles
		for _, manager := range sortedKeys(files) {
			for _, pf := range files[manager] {
				for _, d := range pf.Deps {
					if d.Datasource != "docker" || d.SkipReason != "" || d.DepName == "" {
						continue
					}
					d.Manager, d.PackageFile = manager, pf.PackageFile
					out = append(out, d)
				}
			}
		}
	}
	return out
}

// AllProblems lists the run's and the repositories' problems.
func (r *Report) AllProblems() []string {
	var out []string
	for _, p := range r.Problems {
		out = append(out, p.String())
	}
	for _, name := range sortedKeys(r.Repositories) {
		for _, p := range r.Repositories[name].Problems {
			out = append(out, name+": "+p.String())
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

package gitedit

import (
	"fmt"
	"slices"

	"sigs.k8s.io/yaml"
)

// Record is what the repository keeps of one config, so that a cluster rebuilt from it knows it:
// the version that last passed its health check, and the versions that failed theirs.
type Record struct {
	// Config is the config's namespace/name.
	Config         string   `json:"config"`
	Image          string   `json:"image"`
	CurrentVersion string   `json:"currentVersion,omitempty"`
	FailedVersions []string `json:"failedVersions,omitempty"`
}

const recordHeader = `# What rollgate knows of one RollingUpgradeConfig: the version that last passed its health check and
# the versions that failed theirs. Written by rollgate; a cluster rebuilt from this repository reads
# it back. To allow a failed version again, take it off the config's status.failedVersions.
`

// Marshal is the record's file: the same record always gives the same bytes.
func (r Record) Marshal() []byte {
	r.FailedVersions = slices.Compact(slices.Sorted(slices.Values(r.FailedVersions)))
	b, err := yaml.Marshal(r)
	if err != nil {
		panic(err) // strings and lists of strings always marshal
	}
	return append([]byte(recordHeader), b...)
}

// ParseRecord reads a record's file.
func ParseRecord(b []byte) (Record, error) {
	var r Record
	if err := yaml.UnmarshalStrict(b, &r); err != nil {
		return Record{}, fmt.Errorf("not a rollgate record: %w", err)
	}
	if r.Config == "" || r.Image == "" {
		return Record{}, fmt.Errorf("not a rollgate record: no config or image")
	}
	return r, nil
}

// FailedByImage gathers the failed versions of records by image, for RenovatePreset.
func FailedByImage(records []Record) map[string][]string {
	failed := map[string][]string{}
	for _, r := range records {
		failed[r.Image] = append(failed[r.Image], r.FailedVersions...)
	}
	return failed
}

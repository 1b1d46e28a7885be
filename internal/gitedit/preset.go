package gitedit

import (
	"bytes"
	"encoding/json"
	"maps"
	"regexp"
	"slices"
	"strings"
)

// RenovatePreset is the Renovate preset that keeps failed versions out of Renovate's proposals: for
// each image (repository) a package rule whose allowedVersions refuse exactly its failed versions.
// The whole file is rollgate's, made anew from failed each time, so a version taken off every failed
// list leaves it; the same input always gives the same bytes, so nothing changed commits nothing.
//
// One rule per image, whatever the number of configs that run it: when several of Renovate's
// package rules set allowedVersions for one package, the last one wins, so rules per config would
// forget each other's failures.
func RenovatePreset(failed map[string][]string) []byte {
	type rule struct {
		MatchDatasources  []string `json:"matchDatasources"`
		MatchPackageNames []string `json:"matchPackageNames"`
		AllowedVersions   string   `json:"allowedVersions"`
	}
	preset := struct {
		Schema       string   `json:"$schema"`
		Description  []string `json:"description"`
		PackageRules []rule   `json:"packageRules"`
	}{
		Schema: "https://docs.renovatebot.com/renovate-schema.json",
		Description: []string{"Versions that failed their health check under rollgate, written by rollgate. " +
			"To allow one again, take it off the failed list of the configs that list it."},
		PackageRules: []rule{},
	}
	for _, image := range slices.Sorted(maps.Keys(failed)) {
		versions := slices.Compact(slices.Sorted(slices.Values(failed[image])))
		if len(versions) == 0 {
			continue
		}
		quoted := make([]string, len(versions))
		for i, v := range versions {
			quoted[i] = regexp.QuoteMeta(v)
		}
		preset.PackageRules = append(preset.PackageRules, rule{
			MatchDatasources:  []string{"docker"},
			MatchPackageNames: []string{image},
			AllowedVersions:   "!/^(?:" + strings.Join(quoted, "|") + ")$/",
		})
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(preset); err != nil {
		panic(err) // strings and lists of strings always encode
	}
	return buf.Bytes()
}

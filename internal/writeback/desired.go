// Package writeback decides what a config's outcomes make of its Git repository, and writes the
// outcomes of many configs into one repository in few commits (Queue).
package writeback

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"slices"
	"time"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-billy/v5/util"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/gitedit"
	"github.com/rollgate/rollgate/internal/gitwrite"
	"github.com/rollgate/rollgate/internal/image"
	"github.com/rollgate/rollgate/internal/rollout"
)

// Desired is what the repository must say of one config: its workload's file runs FileVersion, and
// its record lists the version that last passed its health check and the failed ones.
type Desired struct {
	// Path of the workload's file, and whether it is a kustomization (else: marked lines).
	Path          string
	Kustomization bool
	Marker        string
	// FileVersion is the tag the workload's file must say ("" leaves it alone): the version that
	// last passed its health check, or for a GitFirst config the one the engine wants to run (the
	// version in flight, while its health check runs).
	FileVersion string
	Record      gitedit.Record
	// RecordPath is the record's file; PresetPath the Renovate preset ("" for none), made from
	// every record in RecordDir.
	RecordPath, RecordDir, PresetPath string
	// Repository names the repository and branch written (with the push branch, if any).
	Repository string
	// Digest identifies all of the above: the same digest, the same files in the same branch. For a
	// GitFirst config it identifies the last verdict too (Verdict).
	Digest string
	// Verdict is the last verdict of a GitFirst config (its version, result and start), "" for a
	// ClusterFirst one. Under GitFirst Git says what runs, so each verdict is written, even one that
	// changes no version of the status: a rollback made again because a person reverted rollgate's
	// commit in Git must put the file back.
	Verdict string
	// Adopt: the config has never written its record (status.gitWriteBack is empty), so a record
	// already in Git is another life's of the same config (the cluster rebuilt, the config applied
	// again): its failed versions are kept, and handed back to the status (Result.Adopted), never
	// dropped for a status that has not learnt them yet.
	Adopt bool
}

// Desire is what the repository must say of ruc, from its spec and status alone.
func Desire(ruc *v1alpha1.RollingUpgradeConfig, gwb *v1alpha1.GitWriteBack) Desired {
	ref := ruc.Spec.GitWriteBack
	d := Desired{
		Path:          ref.Path,
		Kustomization: IsKustomization(ref.Path),
		Marker:        gitedit.Marker(ruc.Namespace, ruc.Name),
		Record: gitedit.Record{Config: ruc.Namespace + "/" + ruc.Name, Image: ruc.Spec.Image,
			CurrentVersion: ruc.Status.CurrentVersion, FailedVersions: ruc.Status.FailedVersions},
		Adopt:       ruc.Status.GitWriteBack == nil,
		RecordDir:   gwb.Spec.RecordDir,
		RecordPath:  path.Join(gwb.Spec.RecordDir, ruc.Namespace, ruc.Name+".yaml"),
		PresetPath:  gwb.Spec.RenovatePreset,
		Repository:  RepositoryOf(gwb),
		FileVersion: ruc.Status.CurrentVersion,
	}
	if ref.GitFirst() {
		d.FileVersion = ""
		if img := rollout.GitImage(ruc); image.SameRepository(img, ruc.Spec.Image) {
			d.FileVersion = image.Tag(img) // a digest alone is not written: GitFirst rolls out tags
		}
		if h := ruc.Status.VersionHistory; len(h) > 0 {
			last := h[len(h)-1]
			d.Verdict = last.Version + " " + string(last.Status) + " " + last.AppliedAt.UTC().Format(time.RFC3339)
		}
	}
	h := sha256.New()
	parts := []string{d.Repository, d.Path, fmt.Sprint(d.Kustomization), d.Marker, d.RecordPath, d.PresetPath, d.FileVersion, string(d.Record.Marshal())}
	if d.Verdict != "" {
		parts = append(parts, d.Verdict) // a ClusterFirst config's digest stays as it was
	}
	for _, s := range parts {
		fmt.Fprintf(h, "%d:%s\n", len(s), s)
	}
	d.Digest = "sha256:" + hex.EncodeToString(h.Sum(nil))
	return d
}

// RepositoryOf names the branch a GitWriteBack writes: URL#branch, and ->pushBranch when it has one.
func RepositoryOf(gwb *v1alpha1.GitWriteBack) string {
	r := gwb.Spec.URL + "#" + gwb.Spec.Branch
	if gwb.Spec.PushBranch != "" {
		r += "->" + gwb.Spec.PushBranch
	}
	return r
}

// IsKustomization: the file is one kustomize reads as a kustomization.
func IsKustomization(p string) bool {
	switch path.Base(p) {
	case "kustomization.yaml", "kustomization.yml", "Kustomization":
		return true
	}
	return false
}

// Adopted is what the record of an earlier life of a config gives its status (Desired.Adopt).
type Adopted struct {
	// Failed are the versions the record lists as failed and the status does not. The version
	// that last passed by the record is not adopted: a record is evidence of what ran, not a
	// target, and the workload may run another (the config records what it runs, as any new one).
	Failed []string
}

// Edits are the config's own file edits: the workload's file (while there is no FileVersion there is
// nothing to set) and its record. The preset, made from all records, is PresetEdit. When d.Adopt,
// adopted gets what the record in Git says that the status does not.
func (d Desired) Edits(adopted *Adopted) gitwrite.Change {
	var edits gitwrite.Change
	if v := d.FileVersion; v != "" {
		edits = append(edits, gitwrite.Edit{Path: d.Path, Change: func(old []byte, _ billy.Filesystem) ([]byte, error) {
			if old == nil {
				return nil, fmt.Errorf("no such file")
			}
			if d.Kustomization {
				return gitedit.SetKustomizeImage(old, d.Record.Image, v)
			}
			out, n, err := gitedit.SetMarked(old, d.Marker, d.Record.Image, v)
			if err == nil && n == 0 {
				err = fmt.Errorf(`no line is marked for this config: end the image's line with # {"$rollgate": %q}`, d.Marker)
			}
			return out, err
		}})
	}
	return append(edits, gitwrite.Edit{Path: d.RecordPath, Change: func(old []byte, _ billy.Filesystem) ([]byte, error) {
		r := d.Record
		*adopted = Adopted{}
		if d.Adopt && old != nil {
			// A record of an earlier life that cannot be read is never overwritten: its failed
			// versions would be lost, and tried again.
			before, err := gitedit.ParseRecord(old)
			if err != nil {
				return nil, fmt.Errorf("the record there does not read (%w): mend or delete it; rollgate does not overwrite the failed versions it may list", err)
			}
			if !image.SameRepositoryName(before.Image, r.Image) {
				return nil, fmt.Errorf("the record there is of image %s, not %s: delete it, or give this config another recordDir", before.Image, r.Image)
			}
			for _, v := range before.FailedVersions {
				if !slices.Contains(r.FailedVersions, v) {
					adopted.Failed = append(adopted.Failed, v)
				}
			}
			r.FailedVersions = append(slices.Clone(r.FailedVersions), adopted.Failed...)
			if r.CurrentVersion == "" { // the workload is not recorded yet: the record's stays
				r.CurrentVersion = before.CurrentVersion
			}
		}
		return r.Marshal(), nil
	}})
}

// PresetEdit makes the Renovate preset at presetPath from every record under recordDir, as the edits
// before it left them: once per commit, however many configs the commit is for.
func PresetEdit(recordDir, presetPath string) gitwrite.Edit {
	return gitwrite.Edit{Path: presetPath, Change: func(_ []byte, fs billy.Filesystem) ([]byte, error) {
		records, err := readRecords(fs, recordDir)
		if err != nil {
			return nil, err
		}
		return gitedit.RenovatePreset(gitedit.FailedByImage(records)), nil
	}}
}

// readRecords reads the records under dir (<dir>/<namespace>/<name>.yaml); a file there that is not
// a record is an error, so a preset is never made from part of them.
func readRecords(fs billy.Filesystem, dir string) ([]gitedit.Record, error) {
	paths, err := util.Glob(fs, path.Join(dir, "*", "*.yaml"))
	if err != nil {
		return nil, err
	}
	slices.Sort(paths)
	records := make([]gitedit.Record, 0, len(paths))
	for _, p := range paths {
		b, err := util.ReadFile(fs, p)
		if err != nil {
			return nil, err
		}
		r, err := gitedit.ParseRecord(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		records = append(records, r)
	}
	return records, nil
}

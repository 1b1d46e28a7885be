// Package receiver takes registry push notifications (Docker Hub, Harbor, GitHub's container
// registry, and a generic form): it checks that a receiver the cluster admin configured sent them,
// reads which repository was pushed, and asks for an immediate look at the configs of it. The poll
// stays the source of truth: a push only shortens the wait for it.
package receiver

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
)

// Kind is the sender of a receiver's notifications.
type Kind string

// Kinds of receivers.
const (
	DockerHub Kind = "dockerhub" // Docker Hub's repository webhooks
	Harbor    Kind = "harbor"    // Harbor's PUSH_ARTIFACT webhooks
	GHCR      Kind = "ghcr"      // GitHub's package webhooks, of the container registry ghcr.io
	Generic   Kind = "generic"   // {"repository": "registry.example.com/acme/web", "tag": "1.4.0"}
)

// Push is one pushed image: its repository, normalised (index.docker.io/acme/web for acme/web),
// and its tag when the payload names one.
type Push struct {
	Repository string
	Tag        string
}

// ErrIgnored: a well-formed notification of something other than a push (a deletion, a GitHub
// ping); it is answered, and nothing is looked at.
var ErrIgnored = errors.New("not a push")

// Parse reads the pushes of a notification of kind. A payload that is not of that kind is an
// error; one of another event is ErrIgnored.
func Parse(kind Kind, event string, body []byte) ([]Push, error) {
	switch kind {
	case DockerHub:
		var p struct {
			PushData struct {
				Tag string `json:"tag"`
			} `json:"push_data"`
			Repository struct {
				RepoName string `json:"repo_name"`
			} `json:"repository"`
		}
		if err := json.Unmarshal(body, &p); err != nil {
			return nil, err
		}
		return one(p.Repository.RepoName, p.PushData.Tag)
	case Harbor:
		var p struct {
			Type      string `json:"type"`
			EventData struct {
				Resources []struct {
					Tag         string `json:"tag"`
					ResourceURL string `json:"resource_url"`
				} `json:"resources"`
			} `json:"event_data"`
		}
		if err := json.Unmarshal(body, &p); err != nil {
			return nil, err
		}
		if p.Type != "PUSH_ARTIFACT" && p.Type != "pushImage" {
			return nil, ErrIgnored
		}
		var out []Push
		for _, r := range p.EventData.Resources {
			ps, err := one(r.ResourceURL, r.Tag)
			if err != nil {
				return nil, err
			}
			out = append(out, ps...)
		}
		if len(out) == 0 {
			return nil, errors.New("the notification names no pushed artifact")
		}
		return out, nil
	case GHCR:
		if event == "ping" {
			return nil, ErrIgnored
		}
		var p struct {
			Action  string `json:"action"`
			Package *struct {
				Name           string `json:"name"`
				Namespace      string `json:"namespace"`
				PackageType    string `json:"package_type"`
				PackageVersion struct {
					PackageURL        string `json:"package_url"`
					ContainerMetadata struct {
						Tag struct {
							Name string `json:"name"`
						} `json:"tag"`
					} `json:"container_metadata"`
				} `json:"package_version"`
			} `json:"package"`
		}
		if err := json.Unmarshal(body, &p); err != nil {
			return nil, err
		}
		pkg := p.Package
		if pkg == nil || p.Action != "published" || !strings.EqualFold(pkg.PackageType, "container") {
			return nil, ErrIgnored
		}
		if u := pkg.PackageVersion.PackageURL; u != "" {
			return one(u, pkg.PackageVersion.ContainerMetadata.Tag.Name)
		}
		return one("ghcr.io/"+strings.ToLower(pkg.Namespace+"/"+pkg.Name), pkg.PackageVersion.ContainerMetadata.Tag.Name)
	case Generic:
		var p struct {
			Repository string `json:"repository"`
			Tag        string `json:"tag"`
		}
		if err := json.Unmarshal(body, &p); err != nil {
			return nil, err
		}
		return one(p.Repository, p.Tag)
	}
	return nil, fmt.Errorf("unknown receiver kind %q", kind)
}

// one is the push of ref, a repository or an image reference (its tag or digest dropped), and tag.
func one(ref, tag string) ([]Push, error) {
	if ref == "" {
		return nil, errors.New("the notification names no repository")
	}
	repo, err := name.NewRepository(ref, name.WeakValidation)
	if err != nil {
		r, rerr := name.ParseReference(ref, name.WeakValidation)
		if rerr != nil {
			return nil, fmt.Errorf("%q is no repository: %w", ref, err)
		}
		repo = r.Context()
		if t, ok := r.(name.Tag); ok && tag == "" {
			tag = t.TagStr()
		}
	}
	return []Push{{Repository: repo.Name(), Tag: tag}}, nil
}

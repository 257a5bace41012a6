package replica

import (
	"errors"
	"fmt"

	catalogdv1alpha1 "github.com/olmv1/olmv1/catalogd/api/v1alpha1"
	"github.com/olmv1/olmv1/catalogd/internal/storage"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

// PinnedSource is the source that fetches exactly the content resolved names: spec with its
// moving part replaced by the pin (an image tag by the digest, a git branch or tag by the commit)
// and without pollInterval. Settings that are not part of the pin (pull secret, TLS, git
// directory, ConfigMap paths) come from spec when spec still has resolved's type, else they are
// left empty. An HTTP URL or a ConfigMap can only be fetched as it is now: the caller checks the
// content hash before it serves what it fetched.
func PinnedSource(spec rukpakv1alpha1.Source, resolved *rukpakv1alpha1.ResolvedSource) (rukpakv1alpha1.Source, error) {
	if resolved == nil {
		return rukpakv1alpha1.Source{}, errors.New("status.resolvedSource is not set")
	}
	sameType := spec.Type == resolved.Type
	missing := func(member string) error {
		return fmt.Errorf("status.resolvedSource has type %s but no %s", resolved.Type, member)
	}
	switch resolved.Type {
	case rukpakv1alpha1.SourceTypeImage:
		if resolved.Image == nil || resolved.Image.Ref == "" {
			return rukpakv1alpha1.Source{}, missing("image.ref")
		}
		img := rukpakv1alpha1.ImageSource{}
		if sameType && spec.Image != nil {
			img = *spec.Image
		}
		img.Ref, img.PollInterval = resolved.Image.Ref, nil
		return rukpakv1alpha1.Source{Type: resolved.Type, Image: &img}, nil
	case rukpakv1alpha1.SourceTypeGit:
		if resolved.Git == nil || resolved.Git.Commit == "" {
			return rukpakv1alpha1.Source{}, missing("git.commit")
		}
		g := rukpakv1alpha1.GitSource{}
		if sameType && spec.Git != nil {
			g = *spec.Git
		}
		g.Repository, g.Ref, g.PollInterval = resolved.Git.Repository, rukpakv1alpha1.GitRef{Commit: resolved.Git.Commit}, nil
		return rukpakv1alpha1.Source{Type: resolved.Type, Git: &g}, nil
	case rukpakv1alpha1.SourceTypeHTTP:
		if resolved.HTTP == nil || resolved.HTTP.URL == "" {
			return rukpakv1alpha1.Source{}, missing("http.url")
		}
		// spec's URL when it is still an HTTP source: the resolved URL is the one after redirects,
		// which may be a short-lived signed URL.
		h := rukpakv1alpha1.HTTPSource{URL: resolved.HTTP.URL}
		if sameType && spec.HTTP != nil {
			h = *spec.HTTP
		}
		h.PollInterval = nil
		return rukpakv1alpha1.Source{Type: resolved.Type, HTTP: &h}, nil
	case rukpakv1alpha1.SourceTypeConfigMaps:
		if len(resolved.ConfigMaps) == 0 {
			return rukpakv1alpha1.Source{}, missing("configMaps")
		}
		if sameType && len(spec.ConfigMaps) > 0 {
			return rukpakv1alpha1.Source{Type: resolved.Type, ConfigMaps: append([]rukpakv1alpha1.ConfigMapSource(nil), spec.ConfigMaps...)}, nil
		}
		cms := make([]rukpakv1alpha1.ConfigMapSource, 0, len(resolved.ConfigMaps))
		for _, cm := range resolved.ConfigMaps {
			cms = append(cms, rukpakv1alpha1.ConfigMapSource{ConfigMap: rukpakv1alpha1.ConfigMapReference{Name: cm.Name}})
		}
		return rukpakv1alpha1.Source{Type: resolved.Type, ConfigMaps: cms}, nil
	}
	return rukpakv1alpha1.Source{}, fmt.Errorf("status.resolvedSource has unsupported type %q", resolved.Type)
}

// StatusContent is what a Catalog's status says the store must hold, decided once for the leader
// (the last good content after a failed update) and for every other replica (what to serve).
type StatusContent struct {
	// Named is false when the status names no content yet (nothing was unpacked successfully).
	Named bool
	// Held is the content the store already holds with the named hash (nil when it holds none or
	// other content).
	Held *storage.Content
	// Load is the request that fetches exactly the named content (set when Named and not Held).
	Load *Request
}

// WhatStatusNames decides, for cat, what its status names and whether store holds it: the content
// with hash status.contentHash, fetched from status.resolvedSource pinned (PinnedSource). err is set
// when the status names content whose source cannot be pinned: only a new status can fix that.
func WhatStatusNames(cat *catalogdv1alpha1.Catalog, store *storage.Store) (StatusContent, error) {
	want := cat.Status.ContentHash
	if want == "" || cat.Status.ResolvedSource == nil {
		return StatusContent{}, nil
	}
	if cur, ok := store.Get(cat.Name); ok && cur.Hash == want {
		return StatusContent{Named: true, Held: cur}, nil
	}
	src, err := PinnedSource(cat.Spec.Source, cat.Status.ResolvedSource)
	if err != nil {
		return StatusContent{Named: true}, err
	}
	return StatusContent{Named: true, Load: &Request{Catalog: cat.Name, Source: src, WantHash: want}}, nil
}

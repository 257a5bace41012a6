package replica

import (
	"errors"
	"fmt"

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

package cli

import (
	"fmt"
	"net/url"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"regexp"
	"strings"

	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

// install --bundle: the reference of a bundle installed directly (spec.source.type Bundle).
//
//   - an image reference (quay.io/org/bundle:v1, ...@sha256:...) → an Image source;
//   - a git repository: a URL ending in .git, or any ssh://, git://, file:// URL or scp-like address
//     (git@github.com:org/repo.git), optionally followed by #FRAGMENT, where FRAGMENT is
//     "branch=B", "tag=T" or "commit=C", each optionally followed by "&dir=PATH" (the directory of the
//     bundle in the repository); a bare "#X" is a commit when X is 40 or 64 hex digits, else a
//     branch; without a fragment the branch is main → a Git source;
//   - any other http:// or https:// URL (a .tar.gz or a single file) → an HTTP source.

var hexCommit = regexp.MustCompile(`^[0-9a-f]{40}([0-9a-f]{24})?$`)

// bundleSource turns the value of --bundle into the source of a direct bundle.
func bundleSource(ref string) (rukpakv1alpha1.Source, error) {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return rukpakv1alpha1.Source{}, fmt.Errorf("--bundle is empty: give an image reference or a git URL")
	}
	repo, fragment, _ := strings.Cut(ref, "#")
	switch {
	case isGitRepository(repo):
		git, err := gitSource(repo, fragment)
		if err != nil {
			return rukpakv1alpha1.Source{}, err
		}
		return rukpakv1alpha1.Source{Type: rukpakv1alpha1.SourceTypeGit, Git: git}, nil
	case strings.HasPrefix(ref, "http://") || strings.HasPrefix(ref, "https://"):
		if _, err := url.Parse(ref); err != nil {
			return rukpakv1alpha1.Source{}, fmt.Errorf("--bundle %q: %w", ref, err)
		}
		return rukpakv1alpha1.Source{Type: rukpakv1alpha1.SourceTypeHTTP, HTTP: &rukpakv1alpha1.HTTPSource{URL: ref}}, nil
	case strings.Contains(ref, "://") || strings.Contains(ref, "#"):
		return rukpakv1alpha1.Source{}, fmt.Errorf("--bundle %q is neither an image reference, a git repository (a URL ending in .git, ssh://, git://, file:// or git@host:path) nor an http(s) URL", ref)
	}
	return rukpakv1alpha1.Source{Type: rukpakv1alpha1.SourceTypeImage, Image: &rukpakv1alpha1.ImageSource{Ref: ref}}, nil
}

// isGitRepository reports whether repo (a --bundle value without its #fragment) names a git
// repository.
func isGitRepository(repo string) bool {
	for _, p := range []string{"ssh://", "git://", "file://"} {
		if strings.HasPrefix(repo, p) {
			return true
		}
	}
	if strings.HasSuffix(strings.TrimSuffix(repo, "/"), ".git") {
		return true
	}
	// scp-like: user@host:path (an image reference has no '@' before a ':' that is not a digest).
	user, rest, ok := strings.Cut(repo, "@")
	return ok && !strings.Contains(user, "/") && strings.Contains(rest, ":") && !strings.HasPrefix(rest, "sha256:")
}

// gitSource is the git source of repository repo at fragment (see above).
func gitSource(repo, fragment string) (*rukpakv1alpha1.GitSource, error) {
	g := &rukpakv1alpha1.GitSource{Repository: repo}
	if fragment == "" {
		g.Ref.Branch = "main"
		return g, nil
	}
	for _, part := range strings.Split(fragment, "&") {
		k, v, hasValue := strings.Cut(part, "=")
		switch {
		case !hasValue && hexCommit.MatchString(k):
			g.Ref.Commit = k
		case !hasValue && k != "":
			g.Ref.Branch = k
		case k == "branch" && v != "":
			g.Ref.Branch = v
		case k == "tag" && v != "":
			g.Ref.Tag = v
		case k == "commit" && hexCommit.MatchString(v):
			g.Ref.Commit = v
		case k == "dir" && v != "":
			g.Directory = v
		default:
			return nil, fmt.Errorf("--bundle %s#%s: %q is not branch=B, tag=T, commit=<40 or 64 hex digits> or dir=PATH", repo, fragment, part)
		}
	}
	n := 0
	for _, s := range []string{g.Ref.Branch, g.Ref.Tag, g.Ref.Commit} {
		if s != "" {
			n++
		}
	}
	switch n {
	case 0:
		g.Ref.Branch = "main"
	case 1:
	default:
		return nil, fmt.Errorf("--bundle %s#%s: give one of branch, tag or commit", repo, fragment)
	}
	return g, nil
}

// bundleFormat checks the value of --format: RegistryV1 (the default), Plain, Helm or Kustomize, in
// any case.
func bundleFormat(f string) (operatorsv1alpha1.BundleFormat, error) {
	for _, known := range []operatorsv1alpha1.BundleFormat{operatorsv1alpha1.BundleFormatRegistryV1, operatorsv1alpha1.BundleFormatPlain,
		operatorsv1alpha1.BundleFormatHelm, operatorsv1alpha1.BundleFormatKustomize} {
		if strings.EqualFold(f, string(known)) {
			return known, nil
		}
	}
	if f == "" {
		return operatorsv1alpha1.BundleFormatRegistryV1, nil
	}
	return "", fmt.Errorf("--format %q: want RegistryV1, Plain, Helm or Kustomize", f)
}

// directOperator is the Operator install --bundle creates: named name, installing f.bundle directly.
// Flags that select bundles from catalogs are refused.
func (f *installFlags) directOperator(name string) (*operatorsv1alpha1.Operator, error) {
	if f.bundle == "" {
		return nil, fmt.Errorf("--format is for --bundle: give the bundle's image or git URL with --bundle")
	}
	for flag, set := range map[string]bool{"--version": f.version != "", "--channel": f.channel != "", "--catalog-selector": f.catalogSelector != "",
		"--upgrade-policy": f.upgradePolicy != "", "--upgrade-constraint-policy": f.constraintPolicy != "", "--upgrade-scope": f.upgradeScope != "",
		"--dependency-policy": f.dependencyPolicy != "", "--name": f.name != ""} {
		if set {
			return nil, fmt.Errorf("%s cannot be used with --bundle: a bundle installed directly is not resolved from catalogs (NAME names the Operator; upgrade by changing its spec.source.bundle.source)", flag)
		}
	}
	src, err := bundleSource(f.bundle)
	if err != nil {
		return nil, err
	}
	format, err := bundleFormat(f.format)
	if err != nil {
		return nil, err
	}
	return &operatorsv1alpha1.Operator{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: operatorsv1alpha1.OperatorSpec{
			Source: &operatorsv1alpha1.OperatorSource{Type: operatorsv1alpha1.SourceTypeBundle,
				Bundle: &operatorsv1alpha1.DirectBundle{Source: src, Format: format}},
			InstallNamespace: f.namespace, WatchNamespaces: f.watchNamespaces,
		},
	}, nil
}

// directSourceName names op's direct bundle source for messages.
func directSourceName(op *operatorsv1alpha1.Operator) string {
	s := op.Spec.Source.Bundle.Source
	switch {
	case s.Image != nil:
		return s.Image.Ref
	case s.Git != nil:
		return s.Git.Repository
	case s.HTTP != nil:
		return s.HTTP.URL
	}
	return string(s.Type)
}

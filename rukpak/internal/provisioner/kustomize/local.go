package kustomize

import (
	"fmt"
	"io/fs"
	"path"
	"strings"

	"sigs.k8s.io/kustomize/api/provider"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/yaml"
)

// checkLocal walks the kustomization in dir and every kustomization it includes, and fails on the
// first reference that kustomize would fetch over the network. It runs before the build because
// krusty offers no switch to turn remote loading off.
//
// Two kinds of references are checked. Entries of resources, bases, components, generators,
// transformers and validators are tried by kustomize as a local file, then as a directory, then as
// a remote git repository; so each must exist in the bundle (inline YAML entries aside). References
// to single files (patches, crds, configurations, replacements, generator files, openapi) are
// fetched over HTTP when they are http(s) URLs; so they must not be.
func checkLocal(content fs.FS, dir string, visited map[string]bool) error {
	if visited[dir] {
		return nil
	}
	visited[dir] = true
	file := kustomizationFile(content, dir)
	data, err := fs.ReadFile(content, file)
	if err != nil {
		return invalid(ReasonInvalidKustomization, fmt.Sprintf("reading %s: %v", file, err))
	}
	var k types.Kustomization
	if err := yaml.Unmarshal(data, &k); err != nil {
		return invalid(ReasonInvalidKustomization, fmt.Sprintf("%s is not a valid kustomization: %v", file, err))
	}
	if err := checkEntries(content, dir, file, &k, visited); err != nil {
		return err
	}
	for _, f := range fileRefs(&k) {
		if isURL(f.ref) {
			return invalid(ReasonRemoteReference, fmt.Sprintf("%s: %s refers to %q, a remote file; %v", file, f.field, f.ref, errRemote))
		}
	}
	if len(k.HelmCharts) > 0 || len(k.HelmChartInflationGenerator) > 0 {
		return invalid(ReasonInvalidKustomization, fmt.Sprintf("%s inflates Helm charts (helmCharts), which needs the helm binary and the network; render the chart into the bundle, or install it with the core-rukpak-io-helm provisioner", file))
	}
	return nil
}

// checkEntries checks the entries of resources, bases, components, generators, transformers and
// validators of k (in file, in dir): each must be in the bundle, and a directory is checked in turn.
func checkEntries(content fs.FS, dir, file string, k *types.Kustomization, visited map[string]bool) error {
	for _, list := range []struct {
		field   string
		entries []string
	}{
		{"resources", k.Resources}, {"bases", k.Bases}, {"components", k.Components},
		{"generators", k.Generators}, {"transformers", k.Transformers}, {"validators", k.Validators},
	} {
		inline := list.field == "generators" || list.field == "transformers" || list.field == "validators"
		for _, e := range list.entries {
			// A generator/transformer/validator entry that kustomize reads as an inline configuration
			// (it parses as resources; see isInlineConfig) is no reference.
			if inline && isInlineConfig(e) {
				continue
			}
			if err := checkEntry(content, dir, file, list.field, e, visited); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkEntry checks one entry e of field: a file or a directory with a kustomization (checked in
// turn) of the bundle. Any entry is a reference, also with surrounding white space or several lines:
// kustomize fetches "https://host/repo\n" as a remote base, so it is checked trimmed.
func checkEntry(content fs.FS, dir, file, field, e string, visited map[string]bool) error {
	if t := strings.TrimSpace(e); t != e && looksRemote(t) {
		return invalid(ReasonRemoteReference, fmt.Sprintf("%s: %s entry %q is a remote base; %v", file, field, e, errRemote))
	}
	p := path.Join(dir, e)
	if p == ".." || strings.HasPrefix(p, "../") || path.IsAbs(e) {
		return invalid(ReasonInvalidKustomization, fmt.Sprintf("%s: %s entry %q points outside the bundle", file, field, e))
	}
	st, err := fs.Stat(content, p)
	switch {
	case err != nil && looksRemote(e):
		return invalid(ReasonRemoteReference, fmt.Sprintf("%s: %s entry %q is a remote base; %v", file, field, e, errRemote))
	case err != nil:
		return invalid(ReasonInvalidKustomization, fmt.Sprintf("%s: %s entry %q is not a file or directory of the bundle (kustomize would try it as a remote git repository, and %v)", file, field, e, errRemote))
	case !st.IsDir():
		return nil
	case kustomizationFile(content, p) == "":
		return invalid(ReasonInvalidKustomization, fmt.Sprintf("%s: %s entry %q is a directory without a kustomization.yaml", file, field, e))
	}
	return checkLocal(content, p, visited)
}

// fileRef is a reference to a single file, by the field that holds it.
type fileRef struct{ field, ref string }

// fileRefs lists k's references to single files (patches, crds, configurations, replacements,
// generator files, openapi), which kustomize fetches over HTTP when they are http(s) URLs.
func fileRefs(k *types.Kustomization) []fileRef {
	files := []fileRef{{"openapi.path", k.OpenAPI["path"]}}
	for _, f := range k.Crds {
		files = append(files, fileRef{"crds", f})
	}
	for _, f := range k.Configurations {
		files = append(files, fileRef{"configurations", f})
	}
	for _, p := range k.PatchesStrategicMerge {
		files = append(files, fileRef{"patchesStrategicMerge", string(p)})
	}
	for _, p := range append(append([]types.Patch{}, k.Patches...), k.PatchesJson6902...) {
		files = append(files, fileRef{"patches.path", p.Path})
	}
	for _, r := range k.Replacements {
		files = append(files, fileRef{"replacements.path", r.Path})
	}
	var generated []types.GeneratorArgs
	for _, g := range k.ConfigMapGenerator {
		generated = append(generated, g.GeneratorArgs)
	}
	for _, g := range k.SecretGenerator {
		generated = append(generated, g.GeneratorArgs)
	}
	for _, g := range generated {
		for _, f := range append(append([]string{g.EnvSource}, g.EnvSources...), g.FileSources...) {
			if _, after, ok := strings.Cut(f, "="); ok {
				f = after // key=path
			}
			files = append(files, fileRef{"configMapGenerator/secretGenerator files", f})
		}
	}
	return files
}

// inlineResources decides, as kustomize's KustTarget does, whether a generators, transformers or
// validators entry is an inline configuration rather than a path (which kustomize may fetch).
var inlineResources = resmap.NewFactory(provider.NewDefaultDepProvider().GetResourceFactory())

func isInlineConfig(entry string) bool {
	_, err := inlineResources.NewResMapFromBytes([]byte(entry))
	return err == nil
}

// looksRemote reports whether a resources entry is written like a remote base: a URL, an scp-like
// git address, or kustomize's host/org/repo shorthand.
func looksRemote(ref string) bool {
	if isURL(ref) || strings.HasPrefix(ref, "git@") || strings.HasPrefix(ref, "git::") {
		return true
	}
	for _, marker := range []string{"github.com/", "gitlab.com/", "bitbucket.org/", ".git", "_git/", "?ref=", "?version="} {
		if strings.Contains(ref, marker) {
			return true
		}
	}
	return false
}

func isURL(ref string) bool {
	ref = strings.ToLower(strings.TrimSpace(ref))
	return strings.Contains(ref, "://") && !strings.Contains(ref, "\n")
}

package bundlegen

import (
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// buildKustomization builds the kustomization in dir as `kustomize build dir` would, in-process and
// with the settings rukpak's kustomize provisioner uses: no plugins, no Helm inflation, files loaded
// only from inside each kustomization's root. Bases and resources must be local (checked first, as
// krusty itself has no switch to stay off the network); other kustomizations beside dir (../base)
// are fine.
func buildKustomization(dir string) ([]Object, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := checkLocalKustomization(abs, map[string]bool{}); err != nil {
		return nil, err
	}
	opts := krusty.MakeDefaultOptions()
	opts.PluginConfig = types.DisabledPluginConfig()
	opts.LoadRestrictions = types.LoadRestrictionsRootOnly
	resMap, err := krusty.MakeKustomizer(opts).Run(filesys.MakeFsOnDisk(), abs)
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	out, err := resMap.AsYaml()
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	return decode("kustomize build "+filepath.ToSlash(dir), out)
}

// checkLocalKustomization requires every resources, bases and components entry of the
// kustomization in dir (and of those it includes) to be a file or directory on disk.
func checkLocalKustomization(dir string, visited map[string]bool) error {
	if visited[dir] {
		return nil
	}
	visited[dir] = true
	file := kustomizationIn(dir)
	if file == "" {
		return fmt.Errorf("%s is included by a kustomization but holds no kustomization.yaml", dir)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var k types.Kustomization
	if err := yaml.Unmarshal(data, &k); err != nil {
		return fmt.Errorf("%s is not a valid kustomization: %w", file, err)
	}
	if len(k.HelmCharts) > 0 || len(k.HelmChartInflationGenerator) > 0 {
		return fmt.Errorf("%s inflates Helm charts, which needs the helm binary and the network; render the chart into the overlay first", file)
	}
	for _, list := range [][]string{k.Resources, k.Bases, k.Components} {
		for _, e := range list {
			p := filepath.Join(dir, e)
			st, err := os.Stat(p)
			if err != nil {
				return fmt.Errorf("%s: %q is not a local file or directory; generate builds offline, so vendor remote bases into the repository", file, e)
			}
			if st.IsDir() {
				if err := checkLocalKustomization(p, visited); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

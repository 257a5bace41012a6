package helm

import (
	"context"
	"fmt"
	"path"
	"sort"
	"sync"
	"time"

	"helm.sh/helm/v3/pkg/chartutil"
	"k8s.io/client-go/discovery"
)

// CapabilitiesFunc returns what templates see as .Capabilities. It is called once per render.
type CapabilitiesFunc func(ctx context.Context) (*chartutil.Capabilities, error)

// DiscoveryCapabilities reads the cluster's version and served API versions through discovery, as
// `helm install` does, and keeps the answer for ttl: discovery takes a request per API group, and a
// newly installed CRD shows up in .Capabilities.APIVersions after at most ttl.
func DiscoveryCapabilities(dc discovery.DiscoveryInterface, ttl time.Duration) CapabilitiesFunc {
	var (
		mu      sync.Mutex
		cached  *chartutil.Capabilities
		fetched time.Time
	)
	return func(_ context.Context) (*chartutil.Capabilities, error) {
		mu.Lock()
		defer mu.Unlock()
		if cached != nil && time.Since(fetched) < ttl {
			return cached, nil
		}
		info, err := dc.ServerVersion()
		if err != nil {
			return nil, fmt.Errorf("reading the server version: %w", err)
		}
		kv, err := chartutil.ParseKubeVersion(info.GitVersion)
		if err != nil {
			return nil, fmt.Errorf("parsing the server version %q: %w", info.GitVersion, err)
		}
		versions, err := versionSet(dc)
		if err != nil {
			return nil, err
		}
		cached = &chartutil.Capabilities{KubeVersion: *kv, APIVersions: versions, HelmVersion: chartutil.DefaultCapabilities.HelmVersion}
		fetched = time.Now()
		return cached, nil
	}
}

// versionSet lists every served group/version and group/version/Kind, as Helm does for
// .Capabilities.APIVersions.Has. Groups that fail discovery (an aggregated API that is down) are
// left out rather than failing the render.
func versionSet(dc discovery.DiscoveryInterface) (chartutil.VersionSet, error) {
	groups, resources, err := dc.ServerGroupsAndResources()
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return nil, fmt.Errorf("listing the served API versions: %w", err)
	}
	seen := map[string]bool{}
	for _, g := range groups {
		for _, gv := range g.Versions {
			seen[gv.GroupVersion] = true
		}
	}
	for _, r := range resources {
		for _, res := range r.APIResources {
			seen[path.Join(r.GroupVersion, res.Kind)] = true
		}
	}
	out := make(chartutil.VersionSet, 0, len(seen))
	for v := range seen {
		out = append(out, v)
	}
	sort.Strings(out)
	return out, nil
}

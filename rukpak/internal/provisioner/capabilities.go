package provisioner

import (
	"context"
	"fmt"
	"path"
	"sort"
	"sync"
	"time"

	"k8s.io/client-go/discovery"
)

// Capabilities are the cluster's Kubernetes version and served API versions, as Helm's .Capabilities
// shows them to templates.
type Capabilities struct {
	// KubeVersion is the API server's version, e.g. "v1.31.2".
	KubeVersion string
	// APIVersions are the served group/versions and group/version/Kinds ("apps/v1",
	// "apps/v1/Deployment"), sorted.
	APIVersions []string
}

// CapabilitiesFunc returns the cluster's Capabilities. Gather calls it once per render of a Renderer
// that needs them.
type CapabilitiesFunc func(ctx context.Context) (*Capabilities, error)

// DiscoveryCapabilities reads the cluster's version and served API versions through discovery, as
// `helm install` does, and keeps the answer for ttl: discovery takes a request per API group, and a
// newly installed CRD shows up in APIVersions after at most ttl (ttl 0: every call asks).
func DiscoveryCapabilities(dc discovery.DiscoveryInterface, ttl time.Duration) CapabilitiesFunc {
	var (
		mu      sync.Mutex
		cached  *Capabilities
		fetched time.Time
	)
	return func(_ context.Context) (*Capabilities, error) {
		mu.Lock()
		defer mu.Unlock()
		if cached != nil && time.Since(fetched) < ttl {
			return cached, nil
		}
		info, err := dc.ServerVersion()
		if err != nil {
			return nil, fmt.Errorf("reading the server version: %w", err)
		}
		versions, err := versionSet(dc)
		if err != nil {
			return nil, err
		}
		cached = &Capabilities{KubeVersion: info.GitVersion, APIVersions: versions}
		fetched = time.Now()
		return cached, nil
	}
}

// versionSet lists every served group/version and group/version/Kind, as Helm does for
// .Capabilities.APIVersions.Has. Groups that fail discovery (an aggregated API that is down) are
// left out rather than failing the render.
func versionSet(dc discovery.DiscoveryInterface) ([]string, error) {
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
	out := make([]string, 0, len(seen))
	for v := range seen {
		out = append(out, v)
	}
	sort.Strings(out)
	return out, nil
}

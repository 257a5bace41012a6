package chart

import (
	"context"
	"time"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/olmv1/olmv1/e2e/chart/images"
)

// FromBinaries is an install of the chart with the controller images built from binaries.
type FromBinaries struct {
	// BinDir holds the catalogd, rukpak and operator-controller binaries (`make build`).
	BinDir string
	// PushRegistry is where this program pushes the images (host:port[/path], plain HTTP), and
	// PullRegistry where the cluster pulls them from: the same registry as the cluster reaches it.
	PushRegistry, PullRegistry string
	// Release is the release name; the release record is stored in the default namespace.
	Release string
	// Values are added to the chart's values (image values are set by InstallFromBinaries).
	Values map[string]any
}

// InstallFromBinaries builds the three controller images from o.BinDir, pushes them, and installs (or
// upgrades) the chart of repoRoot into the cluster of kubeconfig with those images, named by digest.
// It returns the Helm client and the digest of each image by controller name.
func InstallFromBinaries(ctx context.Context, kubeconfig, repoRoot string, o FromBinaries, timeout time.Duration) (*Client, map[string]name.Digest, error) {
	imgs, err := images.BuildAll(o.BinDir, images.Options{CABundle: images.DefaultCABundle()})
	if err != nil {
		return nil, nil, err
	}
	digests, err := images.PushAll(ctx, imgs, o.PushRegistry, "dev", true)
	if err != nil {
		return nil, nil, err
	}
	vals := map[string]any{"image": map[string]any{"registry": o.PullRegistry}}
	for k, v := range o.Values {
		vals[k] = v
	}
	for key, n := range map[string]string{"catalogd": "catalogd", "rukpak": "rukpak", "operatorController": "operator-controller"} {
		vals[key] = map[string]any{"image": map[string]any{"repository": n, "digest": digests[n].DigestStr()}}
	}
	ch, err := Load(Dir(repoRoot))
	if err != nil {
		return nil, nil, err
	}
	hc, err := NewClient(kubeconfig, "default", nil)
	if err != nil {
		return nil, nil, err
	}
	if _, err := hc.Install(ctx, ch, o.Release, vals, timeout); err != nil {
		return nil, nil, err
	}
	return hc, digests, nil
}

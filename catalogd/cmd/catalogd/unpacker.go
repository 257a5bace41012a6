package main

import (
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/olmv1/olmv1/rukpak/pkg/source"
)

// newUnpacker builds the source unpacker (images, ConfigMaps, HTTP, git) for catalogd. ConfigMaps,
// Secrets and the mirror sets are read directly from the API server (no cluster-wide informer on
// them).
func newUnpacker(mgr ctrl.Manager, f *flags) (source.Unpacker, error) {
	cfg := source.Config{
		CacheDir: f.cacheDir,
		Client:   mgr.GetAPIReader(),
		Log:      ctrl.Log.WithName("catalogd").WithName("source"),
		// Registries, HTTP sources and git servers are reached with the --tls-profile.
		ClientTLS: f.tls.Apply,
		// --require-image-signatures: the Secret is read from --namespace (Options.Namespace).
		RequireSignaturesSecret: f.requireSignatures,
	}
	mp, err := f.mirrors.Provider(mgr.GetAPIReader())
	if err != nil {
		return nil, err
	}
	if mp != nil {
		cfg.Mirrors = mp
	}
	return source.New(cfg)
}

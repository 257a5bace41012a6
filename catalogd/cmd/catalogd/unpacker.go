package main

import (
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/olmv1/olmv1/rukpak/pkg/source"
)

// newUnpacker builds the source unpacker (images, ConfigMaps, HTTP, git) for catalogd. ConfigMaps and
// Secrets are read directly from the API server (no cluster-wide informer on them).
func newUnpacker(mgr ctrl.Manager, f *flags) (source.Unpacker, error) {
	return source.New(source.Config{
		CacheDir: f.cacheDir,
		Client:   mgr.GetAPIReader(),
		Log:      ctrl.Log.WithName("catalogd").WithName("source"),
	})
}

package main

import (
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/olmv1/olmv1/rukpak/pkg/source"
)

// newUnpacker builds the source.Unpacker. reader must not be the manager's label-scoped cache: the
// ConfigMaps and Secrets that sources name carry no rukpak labels.
func newUnpacker(cacheDir string, reader client.Reader) (source.Unpacker, error) {
	return source.New(source.Config{CacheDir: cacheDir, Client: reader, Log: ctrl.Log.WithName("source")})
}
